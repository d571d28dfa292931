from django.apps import AppConfig


class ConnectorsConfig(AppConfig):
    name = "connectors"
    verbose_name = "Connectors"
    default_auto_field = "django.db.models.BigAutoField"
