from django.apps import AppConfig

from changes.credentials import runtime
from changes.lifecycle import extension as change_extension
from changes.resources import extension
from runs.extensions import AppExtension, install


class ChangesConfig(AppConfig):
    name = "changes"
    verbose_name = "Changes"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Each context of the app plugs into the engine with one extension (runs.extensions), in this order.
        # The credentials: a driver's CallContext.secrets, the worker's refusal to start, keeping values fresh.
        install(AppExtension(name="credentials", secrets=runtime.provide, startup_check=runtime.startup_check,
                             keep_fresh=runtime.keep_fresh))
        # The declared state: drift, apply, people (whom a policy's @approve may name).
        extension.install()
        # And, asked after it, the life of a change: its operations and the `change` workflow, taking
        # over its runs when a worker starts on a deployed version, its checks beside a merge's approval.
        change_extension.install()
