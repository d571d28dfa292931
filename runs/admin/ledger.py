"""The ledger: append-only records, read here and never written."""
from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from runs.admin.base import ReadOnlyMixin, is_staff, me, run_link
from runs.admin.common import pretty_json
from runs.approvals.permissions import check_can_view
from runs.display import moment_column
from runs.models import LedgerRecord
from runs.selectors import ledger_records, run_of


@admin.register(LedgerRecord)
class LedgerRecordAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """Append-only: nobody adds, changes or deletes a record here, superusers included."""

    list_display = ("record_id", "run", "seq", "kind", "actor", "workflow", "when", "group")
    list_filter = ("kind",)
    search_fields = ("=run_id", "record_id")
    search_help_text = "Search by run id (exact) or record id"
    ordering = ("-at", "-id")
    list_per_page = 100
    actions = None
    fields = ("record_id", "run", "seq", "kind", "v", "app", "actor", "workflow", "when", "group", "body_json")
    readonly_fields = ("run", "when", "body_json")

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_staff(request)

    def has_view_permission(self, request: HttpRequest, obj: LedgerRecord | None = None) -> bool:
        if not is_staff(request):
            return False
        if obj is None:
            return True
        run = run_of(obj.run_id)
        return run is not None and check_can_view(me(request), run, raise_error=False)

    def get_queryset(self, request: HttpRequest):
        return ledger_records(viewer=me(request))

    @admin.display(description="run", ordering="run_id")
    def run(self, record: LedgerRecord) -> str:
        return run_link(record.run_id)

    when = moment_column("at", "at")  # epoch milliseconds, shown as every moment of the desk is

    @admin.display(description="record")
    def body_json(self, record: LedgerRecord) -> str:
        return pretty_json(record.as_dict())
