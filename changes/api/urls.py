"""The declared state's API routes, mounted at `/api/` beside the runs' routes."""
from django.urls import include, path

urlpatterns = [
    path("", include("changes.api.resources_urls")),
]
