"""Routes: the config, described."""
from django.urls import re_path

from changes.api.config import ConfigView

urlpatterns = [re_path(r"^config(?:/)?$", ConfigView.as_view(), name="config")]
