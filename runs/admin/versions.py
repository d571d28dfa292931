"""The Versions page: each deploy version (AppVersion), the commit it was deployed from, when it
started, its workflows' own versions, how many unfinished runs it holds and its state: live (the
latest deploy), pinned-only (an older deploy that still holds pinned runs: the supervisor starts
a worker for it from a worktree of its commit when one becomes runnable), unused (nothing holds it:
retired at the supervisor's next look) or retired (its worktree removed). A version whose on-demand
worker could not start says why. Each row links to its runs (the run list's `?version=`); a
version's page lists its pinned runs, each with a link to fork it onto the latest version.

Reads through runs.version_states; nothing here changes a version."""
from __future__ import annotations

import threading
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode

from runs.admin.base import ReadOnlyMixin
from runs.display import moment, moment_column
from runs.models import ENDED_STATUSES, AppVersion, Run
from runs.version_states import DeployVersion, VersionState, deploy_versions
from runs.versions import UNCOMMITTED

# The pinned runs a version's page lists (the run list, filtered, has them all).
PINNED_SHOWN = 50
STATE_LABELS = {
    VersionState.LIVE: "live",
    VersionState.PINNED_ONLY: "pinned-only",
    VersionState.UNUSED: "unused (retired at the supervisor's next look)",
    VersionState.RETIRED: "retired",
}


def runs_url(version: str) -> str:
    return reverse("admin:runs_run_changelist") + "?" + urlencode({"version": version})


@admin.register(AppVersion)
class AppVersionAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("version", "state", "commit_short", "started", "workflow_count", "unfinished_runs",
                    "worker_problem")
    ordering = ("-promoted_at",)
    actions = None
    search_fields = ("version", "commit")
    fields = ("version", "state", "commit", "root", "started", "promoted", "retired", "workflow_versions",
              "policy_version", "unfinished_runs", "worker_problem", "pinned_runs")
    readonly_fields = fields
    missing_noun = "version"
    _local = threading.local()  # the states read once per page, not once per row

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        self._local.states = None
        return super().changelist_view(request, extra_context={"title": "Versions", **(extra_context or {})})

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: Any = None) -> HttpResponse:
        self._local.states = None
        return super().change_view(request, object_id, form_url, extra_context)

    def _state(self, version: AppVersion) -> DeployVersion | None:
        states = getattr(self._local, "states", None)
        if states is None:
            states = self._local.states = {v.version: v for v in deploy_versions()}
        return states.get(version.version)

    @admin.display(description="state")
    def state(self, version: AppVersion) -> str:
        found = self._state(version)
        return STATE_LABELS[found.state] if found else ""

    @admin.display(description="commit", ordering="commit")
    def commit_short(self, version: AppVersion) -> str:
        if version.commit:
            return version.commit[:12]
        if version.worker_error == UNCOMMITTED:
            return "(none: deployed from uncommitted changes)"
        return "(none: not a git repository)"

    started = moment_column("first_started_at", "started")
    promoted = moment_column("promoted_at", "promoted")

    @admin.display(description="retired", ordering="retired_at")
    def retired(self, version: AppVersion) -> str:
        return moment(version.retired_at) if version.retired_at else "no"

    @admin.display(description="workflows")
    def workflow_count(self, version: AppVersion) -> str:
        names = sorted(version.workflows)
        if not names:
            return "(not recorded)"
        shown = ", ".join(names[:4])
        return f"{len(names)}: {shown}" + (f" and {len(names) - 4} more" if len(names) > 4 else "")

    @admin.display(description="workflow versions")
    def workflow_versions(self, version: AppVersion) -> str:
        if not version.workflows:
            return "(not recorded)"
        return format_html("<ul>{}</ul>", format_html_join(
            "", "<li><code>{}</code></li>", ((v,) for _name, v in sorted(version.workflows.items()))))

    @admin.display(description="unfinished runs")
    def unfinished_runs(self, version: AppVersion) -> str:
        found = self._state(version)
        count = found.unfinished if found else 0
        return format_html('<a class="version-runs" href="{}">{} unfinished; its runs</a>', runs_url(version.version),
                           count)

    @admin.display(description="worker problem")
    def worker_problem(self, version: AppVersion) -> str:
        return version.worker_error or "—"

    @admin.display(description="pinned runs")
    def pinned_runs(self, version: AppVersion) -> str:
        found = self._state(version)
        if found is None or found.state is not VersionState.PINNED_ONLY:
            return "none"
        runs = list(Run.objects.filter(app_version__in=found.run_versions).exclude(status__in=ENDED_STATUSES)
                    .order_by("created_at")[:PINNED_SHOWN])
        rows = format_html_join("", '<li><a href="{}">{}</a> ({}, {}) · <a href="{}">fork onto the latest version'
                                    '…</a></li>',
                                ((reverse("admin:runs_run_change", args=[quote(r.pk)]), r.pk, r.workflow, r.status,
                                  reverse("admin:runs_run_fork", args=[quote(r.pk)])) for r in runs))
        more = f" (the first {PINNED_SHOWN}; all on its runs list)" if found.unfinished > len(runs) else ""
        who = ("A worker of this version finishes them; or fork one" if version.commit else
               "No worker can run them (no commit holds this code): migrate them with a patch marker, or fork one")
        return format_html("<p>{} onto the latest version from a chosen step (cancel it first: a fork is made from an "
                           "ended run){}.</p><ul>{}</ul>", who, more, rows)
