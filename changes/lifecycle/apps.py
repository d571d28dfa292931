from django.apps import AppConfig

from changes.lifecycle import extension
from runs.approvals import extras as approval_extras
from runs.worker_lifecycle import on_worker_start


class LifecycleConfig(AppConfig):
    name = "changes.lifecycle"
    label = "lifecycle"
    verbose_name = "The life of a change"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Asked after the declared state's provider (this app is installed after it): the change's
        # operations, the `change` workflow, and the drivers of the `sanoma.local` hosts.
        extension.install()
        # The approval a merge waits for shows the change's checks, plan and diff, and links to it.
        approval_extras.register("changes", "changes.lifecycle.admin.merge_approval_extra")
        # A worker starting on a deployed version takes over the change runs that deployed it.
        on_worker_start("changes", "changes.lifecycle.services.take_over_deployed")
