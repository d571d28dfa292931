from django.apps import AppConfig

from changes.lifecycle import extension as change_extension
from changes.resources import extension, people
from runs.approvals import extras as approval_extras
from runs.policies import approvers
from runs.worker_lifecycle import on_worker_start


class ChangesConfig(AppConfig):
    name = "changes"
    verbose_name = "Changes"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The engine resolves every config with what the declared state adds: drift, apply, people.
        extension.install()
        # A policy's @approve may name the people and groups the data files declare (the checks ask).
        approvers.install_declared(people.declared_names)
        # And, asked after it, what the life of a change adds: its operations and the `change` workflow.
        change_extension.install()
        # The approval a merge waits for shows the change's checks, plan and diff, and links to it.
        approval_extras.register("changes", "changes.admin_changes.merge_approval_extra")
        # A worker starting on a deployed version takes over the change runs that deployed it.
        on_worker_start("changes", "changes.lifecycle.services.take_over_deployed")
