"""App versions, and the workflows whose object permissions (guardian) grant who may start them."""
from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from guardian.admin import GuardedModelAdmin

from runs.admin.common import ReadOnlyMixin
from runs.config.registry import get_config
from runs.models import AppVersion, WorkflowEntry
from runs.versions import sync_workflow_entries


@admin.register(AppVersion)
class AppVersionAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("version", "first_started_at", "promoted_at", "current")
    ordering = ("-promoted_at",)
    actions = None

    @admin.display(boolean=True, description="this site's version")
    def current(self, version: AppVersion) -> bool:
        return version.version == get_config().version


@admin.register(WorkflowEntry)
class WorkflowEntryAdmin(GuardedModelAdmin):
    """One row per workflow of the config: its "Object permissions" page grants who may start it."""

    list_display = ("name", "config_title", "app", "in_config")
    search_fields = ("name",)
    readonly_fields = ("name", "title", "app")
    fields = ("name", "title", "app")
    actions = None

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def changelist_view(self, request: HttpRequest, extra_context: Any = None):
        sync_workflow_entries(get_config())  # every workflow of the config has a row to grant on
        return super().changelist_view(request, extra_context)

    @admin.display(description="title")
    def config_title(self, entry: WorkflowEntry) -> str:
        definition = get_config().workflows.get(entry.name)
        return (definition.title if definition else entry.title) or ""

    @admin.display(boolean=True, description="in the config")
    def in_config(self, entry: WorkflowEntry) -> bool:
        return entry.name in get_config().workflows

