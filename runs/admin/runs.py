"""The runs: the list, the run page (steps, approvals, the ledger as a timeline), cancelling."""
from __future__ import annotations

import datetime as dt
import json
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.db.models import Count, IntegerField, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode

from connectors.errors import SanomaError
from runs import ledger, selectors, services
from runs.admin.common import ReadOnlyMixin, is_staff, me, pretty_json, refusal
from runs.admin.start import StartRunMixin
from runs.approvals.permissions import can_operate, check_can_view, visible_runs
from runs.models import Approval, ApprovalStatus, Run, Step
from runs.selectors import children_of, waiting_on


def run_url(run_id: str) -> str:
    return reverse("admin:runs_run_change", args=[quote(run_id)])


class StepInline(ReadOnlyMixin, admin.TabularInline):
    model = Step
    extra = 0
    can_delete = False
    ordering = ("seq",)
    fields = ("seq", "kind", "name", "attempt", "output_json", "error_json", "decision_json", "created_at")
    readonly_fields = fields
    verbose_name = "step (checkpoint)"
    verbose_name_plural = "steps (checkpoints)"

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None or check_can_view(me(request), obj, raise_error=False)

    @admin.display(description="output")
    def output_json(self, step: Step) -> str:
        return pretty_json(step.output)

    @admin.display(description="error")
    def error_json(self, step: Step) -> str:
        return pretty_json(step.error)

    @admin.display(description="decision")
    def decision_json(self, step: Step) -> str:
        return pretty_json(step.decision)


class ApprovalInline(ReadOnlyMixin, admin.TabularInline):
    model = Approval
    extra = 0
    can_delete = False
    ordering = ("seq",)
    fields = ("approval", "title", "approver", "status", "requested_by", "op", "covers", "decided_by", "decided_at",
              "note")
    readonly_fields = fields

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None or check_can_view(me(request), obj, raise_error=False)

    @admin.display(description="approval")
    def approval(self, approval: Approval) -> str:
        url = reverse("admin:runs_approval_change", args=[approval.pk])
        action = "decide" if approval.status == ApprovalStatus.PENDING else "open"
        return format_html('<a href="{}">{}</a> ({})', url, approval.approval_id, action)


@admin.register(Run)
class RunAdmin(ReadOnlyMixin, StartRunMixin, admin.ModelAdmin):
    list_display = ("id", "workflow", "status", "started_by", "created_at", "pending_approvals", "error_code")
    list_filter = ("status", "workflow", "started_by")
    search_fields = ("id",)
    search_help_text = "Search by run id"
    ordering = ("-created_at", "-id")
    list_per_page = 50
    inlines = (ApprovalInline, StepInline)
    actions = ("cancel_selected",)
    fieldsets = (
        (None, {"fields": (("id", "workflow", "status"), ("started_by", "groups"), ("waiting_for", "wake_at"),
                           "waiting_detail", "app_version")}),
        ("Related runs", {"fields": ("parent_link", "children_links")}),
        ("When", {"fields": (("created_at", "updated_at", "ended_at"),)}),
        ("Input", {"fields": ("input_json",)}),
        ("Outcome", {"fields": ("result_json", "error_json")}),
        ("Ledger", {"fields": ("ledger_chain",)}),
        ("Lease", {"fields": ("lease_owner", "lease_until", "signal_gen"), "classes": ("collapse",)}),
    )
    readonly_fields = ("input_json", "result_json", "error_json", "ledger_chain", "waiting_detail", "parent_link",
                       "children_links")

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_staff(request)

    def has_view_permission(self, request: HttpRequest, obj: Run | None = None) -> bool:
        if not is_staff(request):
            return False
        return obj is None or check_can_view(me(request), obj, raise_error=False)

    def get_queryset(self, request: HttpRequest):
        pending = (
            Approval.objects.filter(run=OuterRef("pk"), status=ApprovalStatus.PENDING)
            .order_by().values("run").annotate(n=Count("id")).values("n")
        )
        runs = visible_runs(me(request))
        return runs.annotate(pending_count=Coalesce(Subquery(pending, output_field=IntegerField()), Value(0)))

    @admin.display(description="pending approvals", ordering="pending_count")
    def pending_approvals(self, run: Run) -> int:
        return getattr(run, "pending_count", 0)

    @admin.display(description="error")
    def error_code(self, run: Run) -> str:
        if not run.error:
            return ""
        return run.error.get("code") or run.error.get("name") or "error"

    @admin.display(description="waits for")
    def waiting_detail(self, run: Run) -> str:
        waiting = waiting_on(run)
        if waiting is None:
            return "-"
        if waiting["kind"] == "message":
            what = f'a message on "{waiting["topic"]}"'
        elif waiting["kind"] == "run":
            return format_html('its child run <a href="{}">{}</a>{}', run_url(waiting["run_id"]), waiting["run_id"],
                               f' until {waiting["until"]}' if waiting["until"] else "")
        elif waiting["kind"] == "approval":
            what = ", ".join(f'{a["title"]} ({a["approver"]})' for a in waiting["approvals"]) or "an approval"
        else:
            what = waiting["kind"]
        return what + (f' until {waiting["until"]}' if waiting["until"] else "")

    @admin.display(description="started by run")
    def parent_link(self, run: Run) -> str:
        if run.parent_id is None:
            return "-"
        return format_html('<a href="{}">{}</a>', run_url(run.parent_id), run.parent_id)

    @admin.display(description="child runs")
    def children_links(self, run: Run) -> str:
        children = children_of(run)
        if not children:
            return "-"
        return format_html_join(", ", '<a href="{}">{}</a> ({}, {})',
                                ((run_url(c["id"]), c["id"], c["workflow"], c["status"]) for c in children))

    @admin.display(description="input")
    def input_json(self, run: Run) -> str:
        return pretty_json(run.input)

    @admin.display(description="result")
    def result_json(self, run: Run) -> str:
        return pretty_json(run.result)

    @admin.display(description="error")
    def error_json(self, run: Run) -> str:
        return pretty_json(run.error)

    @admin.display(description="hash chain")
    def ledger_chain(self, run: Run) -> str:
        """The run's ledger checked as `manage.py ledger verify --run` does (runs.ledger)."""
        result = ledger.verify(run.id)
        if result.breaks:
            return f"BROKEN: {result.breaks[0]}"
        return f"verified: {result.records} records, each linked to the one before by its SHA-256"

    # -- actions

    @admin.action(description="Cancel selected runs")
    def cancel_selected(self, request: HttpRequest, queryset) -> None:
        cancelled = []
        for run in queryset:
            try:
                services.cancel(run_id=run.id, by=me(request))
            except SanomaError as err:
                self.message_user(request, f"{run.id} was not cancelled: {refusal(err)}", messages.ERROR)
            else:
                cancelled.append(run.id)
        if cancelled:
            self.message_user(request, f"Cancelled {len(cancelled)} run(s): {', '.join(cancelled)}", messages.SUCCESS)

    # -- pages

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("start/", wrap(self.start_view), name="runs_run_start"),
            path("<path:object_id>/cancel/", wrap(self.cancel_view), name="runs_run_cancel"),
            *super().get_urls(),
        ]

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None):
        extra_context = dict(extra_context or {})
        run = self.get_object(request, unquote(object_id))
        if run is not None:
            try:
                records = selectors.ledger_of(run_id=run.id, viewer=me(request))
            except SanomaError:
                records = []
            extra_context.update(
                ledger_rows=[timeline_row(r) for r in records],
                run_ended=run.ended,
                may_cancel=not run.ended and can_operate(me(request), run),
                cancel_url=reverse("admin:runs_run_cancel", args=[quote(run.pk)]),
                ledger_list_url=reverse("admin:runs_ledgerrecord_changelist") + "?" + urlencode({"run_id": run.id}),
            )
        return super().change_view(request, object_id, form_url, extra_context)

    def cancel_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        run = self.get_object(request, unquote(object_id))
        if run is None:
            # A private ModelAdmin method (Django's own "doesn't exist" redirect) missing from django-stubs.
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)  # type: ignore[attr-defined]
        if request.method == "POST":
            try:
                services.cancel(run_id=run.id, by=me(request))
            except SanomaError as err:
                self.message_user(request, f"{run.id} was not cancelled: {refusal(err)}", messages.ERROR)
            else:
                self.message_user(request, f"Cancelled {run.id}: it makes no further calls", messages.SUCCESS)
        return redirect("admin:runs_run_change", quote(run.pk))


def timeline_row(record: dict[str, Any]) -> dict[str, Any]:
    """A ledger record as one line of the run page's timeline."""
    kind = record.get("type", "")
    what = ""
    if kind == "op.called":
        what = f"{record.get('op')} ({record.get('effect')})"
    elif kind.startswith("approval."):
        parts = [record.get("approval", "")]
        for key in ("title", "approver", "by"):
            if record.get(key):
                parts.append(f"{key} {record[key]}")
        what = ", ".join(p for p in parts if p)
    elif kind == "sleep.started":
        what = f"until {record.get('until')}"
    elif kind == "run.cancelled":
        what = f"by {record.get('by')}"
    decision = record.get("decision")
    if isinstance(decision, dict):
        decision_text = str(decision.get("kind", ""))
        if decision.get("approver"):
            decision_text += f" ({decision['approver']})"
        if decision.get("reason"):
            decision_text += f": {decision['reason']}"
    else:
        decision_text = str(decision or "")
    error = record.get("error")
    error_text = ""
    if isinstance(error, dict):
        error_text = f"{error.get('code') or error.get('name', 'error')}: {error.get('message', '')}"
    group = record.get("group")
    at = record.get("at")
    when = dt.datetime.fromtimestamp(at / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] if at else ""
    return {
        "seq": record.get("seq"), "type": kind, "at": when, "what": what, "decision": decision_text,
        "error": error_text, "group": json.dumps(group) if group is not None else "",
        "body": json.dumps(record, indent=2, sort_keys=True, default=str),
    }
