from django.apps import AppConfig

import changes.lifecycle.errors  # noqa: F401  (registers the app's error codes: the registry is whole once apps are ready)
from changes.lifecycle import extension


class LifecycleConfig(AppConfig):
    name = "changes.lifecycle"
    label = "lifecycle"
    verbose_name = "The life of a change"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Asked after the declared state's extension (this app is installed after it): the change's
        # operations, the `change` workflow, the drivers of the `sanoma.local` hosts, taking over
        # after a deploy and the checks shown beside a merge's approval.
        extension.install()
