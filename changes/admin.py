"""The declared state's desk pages (registered by importing them): Resources, and the Changes pages."""
from changes import admin_changes, admin_resources  # noqa: F401
