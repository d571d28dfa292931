from django.apps import AppConfig

from changes.credentials import runtime
from changes.resources import extension
from runs.engine import secrets


class ChangesConfig(AppConfig):
    name = "changes"
    verbose_name = "Changes"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The engine reads connectors' secrets through these hooks (it may not import this layer):
        # a driver's CallContext.secrets, the worker's refusal to start, and keeping values fresh.
        secrets.install(runtime.provide)
        secrets.install_startup_check(runtime.startup_check)
        secrets.install_refresher(runtime.keep_fresh)
        # The engine resolves every config with what the declared state adds: drift, apply, people.
        extension.install()
