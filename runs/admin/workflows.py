"""Who may start each workflow: a row per workflow whose object permissions
(guardian's page) grant it. The catalog's page of a workflow links here ("Grant…"); the sidebar
lists workflows once, in the catalog."""
from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import quote, unquote
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import path
from guardian.admin import GuardedModelAdmin

from runs.approvals.permissions import workflow_entry
from runs.approvals.selectors import entry_named
from runs.config.registry import get_config
from runs.models import WorkflowEntry


def _number(key: str) -> str:
    if not (key.isascii() and key.isdigit() and len(key) < 19):
        raise Http404("No such row")
    return key


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

    # guardian's permission pages look their keys up as they come: a key that is not a number is a 404
    # here, not a ValueError (500).
    def obj_perms_manage_view(self, request: HttpRequest, object_pk: str) -> HttpResponse:
        return super().obj_perms_manage_view(request, _number(unquote(object_pk)))

    def obj_perms_manage_user_view(self, request: HttpRequest, object_pk: str, user_id: str) -> HttpResponse:
        return super().obj_perms_manage_user_view(request, _number(object_pk), _number(user_id))

    def obj_perms_manage_group_view(self, request: HttpRequest, object_pk: str, group_id: str) -> HttpResponse:
        return super().obj_perms_manage_group_view(request, _number(object_pk), _number(group_id))

    def get_urls(self) -> list[Any]:
        grant = self.admin_site.admin_view(self.grant_view)
        return [path("grant/<str:name>/", grant, name="runs_workflowentry_grant"), *super().get_urls()]

    def grant_view(self, request: HttpRequest, name: str) -> HttpResponse:
        """From a workflow's catalog page (its "Grant…" button, a POST) to guardian's page granting who
        may start it. The workflow's row, to grant on, is made here when no worker has made it yet
        (a starting worker makes one per workflow of its config); a GET only reads."""
        if name not in get_config().workflows:
            raise Http404(f"No workflow {name}")
        if not self.has_change_permission(request):
            return redirect("admin:catalog_workflow", name)
        entry = workflow_entry(name) if request.method == "POST" else entry_named(name)
        if entry is None:
            return redirect("admin:catalog_workflow", name)
        return redirect("admin:runs_workflowentry_permissions", quote(str(entry.pk)))

    @admin.display(description="title")
    def config_title(self, entry: WorkflowEntry) -> str:
        definition = get_config().workflows.get(entry.name)
        return (definition.title if definition else entry.title) or ""

    @admin.display(boolean=True, description="in the config")
    def in_config(self, entry: WorkflowEntry) -> bool:
        return entry.name in get_config().workflows

