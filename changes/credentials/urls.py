"""The credentials' routes, mounted at `/api/` (with or without a trailing slash)."""
from django.urls import re_path

from changes.credentials.api import CredentialDetailView, CredentialListView

urlpatterns = [
    re_path(r"^credentials(?:/)?$", CredentialListView.as_view(), name="credentials"),
    re_path(r"^credentials/(?P<name>[^/]+)(?:/)?$", CredentialDetailView.as_view(), name="credential"),
]
