from django.apps import AppConfig


class ChangesConfig(AppConfig):
    name = "changes"
    verbose_name = "Changes"
    default_auto_field = "django.db.models.BigAutoField"
