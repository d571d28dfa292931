"""The company's collections, read-only: every record of every collection, by collection and key.

A record changes only through a workflow (`ctx.data.<name>.put`), where the policy decides and the
ledger records it; here nobody adds, changes or deletes one, superusers included. Who may look:
staff holding `runs.view_collectionrecord` (given in the admin to a user or a group) and operators
(`runs.view_any_run`).
"""
from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from runs.admin.base import ReadOnlyMixin, is_staff, me, run_link
from runs.admin.common import pretty_json
from runs.collections import selectors
from runs.config.registry import get_config
from runs.display import moment_column
from runs.models import CollectionRecord


class CollectionFilter(admin.SimpleListFilter):
    """The declared collections, each with how many records it holds."""

    title = "collection"
    parameter_name = "collection"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(c.name, f"{c.name} ({c.records})") for c in selectors.summaries(get_config().collections)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[CollectionRecord]) -> QuerySet[CollectionRecord]:
        value = self.value()
        return queryset.filter(collection=value) if value else queryset


@admin.register(CollectionRecord)
class CollectionRecordAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("collection", "key", "version", "updated", "run")
    list_filter = (CollectionFilter,)
    search_fields = ("key",)
    search_help_text = "Search by key"
    ordering = ("collection", "key")
    list_per_page = 100
    actions = None
    fields = ("collection", "key", "version", "updated", "run", "record_json")
    readonly_fields = ("updated", "run", "record_json")

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_staff(request) and selectors.may_read(me(request))

    def has_view_permission(self, request: HttpRequest, obj: CollectionRecord | None = None) -> bool:
        return is_staff(request) and selectors.may_read(me(request))

    updated = moment_column("updated_at", "updated")

    @admin.display(description="written by run", ordering="updated_by_run")
    def run(self, record: CollectionRecord) -> str:
        return run_link(record.updated_by_run) if record.updated_by_run else "-"

    @admin.display(description="record")
    def record_json(self, record: CollectionRecord) -> str:
        return pretty_json(record.record)
