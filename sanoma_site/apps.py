"""The admin, configured as the operator's desk (its site class is imported when Django needs it)."""
from django.contrib.admin.apps import AdminConfig


class DeskAdminConfig(AdminConfig):
    default_site = "sanoma_site.desk.DeskSite"
