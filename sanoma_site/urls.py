"""The site: the operator's desk at /admin/, the JSON API at /api/ (its index; OpenAPI at
/api/schema/, Swagger UI at /api/docs/; the scenarios and the whole config, which the site composes)."""
from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from runs.api.views import NotFoundView
from runs.health.views import healthz, readyz
from runs.telemetry.views import metrics
from sanoma_site.api_config import ConfigView
from sanoma_site.api_index import ApiIndexView
from sanoma_site.api_scenarios import ScenarioListView
from sanoma_site.icon import favicon

urlpatterns = [
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    path("admin/", admin.site.urls),
    path("favicon.ico", favicon, name="favicon"),
    path("metrics", metrics, name="metrics"),  # Prometheus' format, for a scraper with the token
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("api/", ApiIndexView.as_view(), name="api-index"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    re_path(r"^api/scenarios(?:/)?$", ScenarioListView.as_view(), name="api-scenarios"),
    re_path(r"^api/config(?:/)?$", ConfigView.as_view(), name="config"),
    path("api/", include("runs.api.urls")),
    path("api/", include("changes.urls")),
    path("api/", include("changes.credentials.urls")),
    path("api/", include("changes.lifecycle.urls")),
    re_path(r"^api/", NotFoundView.as_view()),
]
