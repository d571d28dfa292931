from django.apps import AppConfig

from changes.credentials import runtime
from runs.engine import secrets


class CredentialsConfig(AppConfig):
    name = "changes.credentials"
    label = "credentials"
    verbose_name = "Credentials"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The engine reads connectors' secrets through these hooks (it may not import this layer):
        # a driver's CallContext.secrets, the worker's refusal to start, and keeping values fresh.
        secrets.install(runtime.provide)
        secrets.install_startup_check(runtime.startup_check)
        secrets.install_refresher(runtime.keep_fresh)
