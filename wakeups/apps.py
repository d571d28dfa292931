from django.apps import AppConfig

from wakeups import extension


class WakeupsConfig(AppConfig):
    name = "wakeups"
    verbose_name = "Wakeups"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Beside a host type, the runtime's own wakeup is an operation of every config; its type is the runtime's.
        extension.install()
