from django.apps import AppConfig


class WakeupsConfig(AppConfig):
    name = "wakeups"
    verbose_name = "Wakeups"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from wakeups import extension

        # Beside a host type, the runtime's own wakeup is an operation of every config; its type is the runtime's.
        extension.install()
