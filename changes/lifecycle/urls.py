"""The changes' routes, mounted at `/api/` (with or without a trailing slash)."""
from django.urls import re_path

from changes.lifecycle.api import ChangeDetailView, ChangeListView, GitHubWebhookView

urlpatterns = [
    re_path(r"^changes(?:/)?$", ChangeListView.as_view(), name="changes"),
    re_path(r"^changes/webhooks/github(?:/)?$", GitHubWebhookView.as_view(), name="changes-github-webhook"),
    re_path(r"^changes/(?P<run_id>[^/]+)(?:/)?$", ChangeDetailView.as_view(), name="change"),
]
