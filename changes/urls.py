"""The declared state's API routes, mounted at `/api/` beside the runs' routes."""
from django.urls import re_path

from changes.api import ApplyView, DriftView, PlanView, ResourceListView

urlpatterns = [
    re_path(r"^resources(?:/)?$", ResourceListView.as_view(), name="resources"),
    re_path(r"^resources/drift(?:/)?$", DriftView.as_view(), name="resources-drift"),
    re_path(r"^resources/plan(?:/)?$", PlanView.as_view(), name="resources-plan"),
    re_path(r"^resources/apply(?:/)?$", ApplyView.as_view(), name="resources-apply"),
]
