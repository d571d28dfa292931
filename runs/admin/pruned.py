"""The Pruned runs page: each run retention exported and removed, with when it ended, when it went,
how many ledger records its chain had, its chain's last hash and the export file holding it. A link
to a removed run's page (from a change, a bookmark, an alert) comes here with a note saying so,
for whoever may read this page; everyone else is told, as for any run, that there is no such run
or they may not see it.

Reads only; retention (`manage.py retention`) writes these rows."""
from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.utils import quote
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from runs.admin.base import ReadOnlyMixin
from runs.retention.models import PrunedRun


@admin.register(PrunedRun)
class PrunedRunAdmin(ReadOnlyMixin, admin.ModelAdmin):
    missing_noun = "pruned run"
    list_display = ("run_id", "workflow", "status", "ended_at", "pruned_at", "records", "export_file")
    list_filter = ("status", "workflow")
    search_fields = ("run_id",)
    search_help_text = "Search by run id"
    fields = ("run_id", "workflow", "status", "ended_at", "pruned_at", "records", "head", "export_file")
    readonly_fields = fields


def pruned_run_redirect(request: HttpRequest, run_id: str) -> HttpResponse | None:
    """Where a link to a run retention removed goes, for a user who may read the pruned runs: that
    run's row, with a note saying what happened to it and how to check its export. None otherwise."""
    if not request.user.has_perm("runs.view_prunedrun"):
        return None
    pruned = PrunedRun.objects.filter(run_id=run_id).first()
    if pruned is None:
        return None
    messages.info(request, (
        f"Run {run_id} ended {pruned.ended_at:%Y-%m-%d %H:%M} UTC ({pruned.status}) and was removed by retention on "
        f"{pruned.pruned_at:%Y-%m-%d %H:%M} UTC. Its {pruned.records} ledger records are in the export "
        f"{pruned.export_file}: check it with `manage.py ledger verify --export <retention folder>/"
        f"{pruned.export_file}`."))
    return redirect(reverse("admin:runs_prunedrun_change", args=[quote(pruned.pk)]))
