from django.apps import AppConfig

from changes.resources import extension, people
from runs.policies import approvers


class ChangesConfig(AppConfig):
    name = "changes"
    verbose_name = "Changes"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The engine resolves every config with what the declared state adds: drift, apply, people.
        extension.install()
        # A policy's @approve may name the people and groups the data files declare (the checks ask).
        approvers.install_declared(people.declared_names)
