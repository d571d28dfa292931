from django.apps import AppConfig

import changes.credentials.errors  # noqa: F401  (registers the app's error codes: the registry is whole once apps are ready)
from changes.credentials import runtime
from runs.extensions import AppExtension, install


class CredentialsConfig(AppConfig):
    name = "changes.credentials"
    label = "credentials"
    verbose_name = "Credentials"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The engine reads connectors' secrets through this app's extension (it may not import this
        # layer): a driver's CallContext.secrets, the worker's refusal to start, keeping values fresh.
        install(AppExtension(name="credentials", secrets=runtime.provide, startup_check=runtime.startup_check,
                             keep_fresh=runtime.keep_fresh))
