from django.apps import AppConfig

import changes.errors  # noqa: F401  (registers the app's error codes: the registry is whole once apps are ready)
from changes.resources import extension


class ChangesConfig(AppConfig):
    name = "changes"
    verbose_name = "Changes"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The declared state plugs into the engine with one extension (runs.extensions): drift, apply,
        # people (whom a policy's @approve may name). The credentials and the life of a change, apps
        # of their own, install theirs from their own ready(), after this one.
        extension.install()
