"""The declared state's routes, mounted at /api/."""
from django.urls import re_path

from changes.api.resources import ResourceListView

urlpatterns = [
    re_path(r"^resources(?:/)?$", ResourceListView.as_view(), name="resources"),
]
