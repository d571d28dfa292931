from django.apps import AppConfig


class WakeupsConfig(AppConfig):
    name = "wakeups"
    verbose_name = "Wakeups"
    default_auto_field = "django.db.models.BigAutoField"
