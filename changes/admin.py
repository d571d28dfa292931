"""The declared state's desk pages (registered by importing them): Resources."""
from changes import admin_resources  # noqa: F401
