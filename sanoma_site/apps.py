"""The site as Django apps: the admin, configured as the operator's desk (its site class is imported
when Django needs it), and the site itself, which composes the apps below it (the demo command)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig

from runs.telemetry import tracing

if TYPE_CHECKING:
    from runs.config.resolution import ResolvedConfig
    from runs.sandbox.scenarios import Chosen, ScenarioReader


class DeskAdminConfig(AdminConfig):
    default_site = "sanoma_site.desk.DeskSite"


class _LibraryScenarios:
    """The scenario library's reader (`features.library.sandbox.SCENARIOS`), imported at its first use:
    the library brings behave and its parsers, which a process that never reads a scenario (most
    `manage.py` commands) need not import when Django starts."""

    @staticmethod
    def _book() -> ScenarioReader:
        from features.library.sandbox import SCENARIOS

        return SCENARIOS

    def of_workflow(self, config: ResolvedConfig, workflow: str | None) -> list[Chosen]:
        return self._book().of_workflow(config, workflow)

    def find(self, config: ResolvedConfig, *, name: str, workflow: str | None = None) -> Chosen:
        return self._book().find(config, name=name, workflow=workflow)

    def seed(self, config: ResolvedConfig, chosen: Chosen) -> None:
        self._book().seed(config, chosen)

    def checks(self, config: ResolvedConfig, chosen: Chosen, *, run_id: str,
               calls_before: dict[str, int]) -> list[dict[str, Any]]:
        return self._book().checks(config, chosen, run_id=run_id, calls_before=calls_before)


class SiteConfig(AppConfig):
    name = "sanoma_site"
    verbose_name = "The site"

    def ready(self) -> None:
        # Traces are off unless an OTLP endpoint is configured (runs.telemetry.tracing).
        tracing.configure_from_settings()
        # Sandbox runs read the company's scenarios through the scenario library (above the runtime).
        from runs.sandbox.scenarios import install

        install(_LibraryScenarios())
