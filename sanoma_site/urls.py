"""The site: the operator's desk at /admin/, the JSON API at /api/ (OpenAPI at /api/schema/)."""
from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView

from runs.api.views import NotFoundView

urlpatterns = [
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/", include("runs.api.urls")),
    path("api/", include("changes.api.urls")),
    re_path(r"^api/", NotFoundView.as_view()),
]
