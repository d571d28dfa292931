"""The site as Django apps: the admin, configured as the operator's desk (its site class is imported
when Django needs it), and the site itself, which composes the apps below it (the demo command)."""
from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig

from runs.telemetry import tracing


class DeskAdminConfig(AdminConfig):
    default_site = "sanoma_site.desk.DeskSite"


class SiteConfig(AppConfig):
    name = "sanoma_site"
    verbose_name = "The site"

    def ready(self) -> None:
        # Traces are off unless an OTLP endpoint is configured (runs.telemetry.tracing).
        tracing.configure_from_settings()
        # Sandbox runs read the company's scenarios through the scenario library (above the runtime).
        from features.library.sandbox import SCENARIOS
        from runs.sandbox.scenarios import install

        install(SCENARIOS)
