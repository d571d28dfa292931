"""The runs: the list, the run page (steps, approvals, the ledger as a timeline), cancelling."""
from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import quote, unquote
from django.db.models import Count, IntegerField, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode

from connectors.errors import SanomaError
from runs import ledger, recovery, selectors, services
from runs.admin.common import LIVE_SECONDS, ReadOnlyMixin, is_staff, me, pretty_json, refusal, run_link
from runs.admin.graph import graph_of
from runs.admin.now import sentence
from runs.admin.run_filters import TagFilter, WaitingForFilter, tag_terms
from runs.admin.start import StartRunMixin
from runs.approvals.permissions import can_operate, can_rerun, can_send_message, check_can_view, visible_runs
from runs.approvals.selectors import approvals_of
from runs.display import duration, moment
from runs.models import Approval, ApprovalStatus, Run, RunStatus, Step
from runs.selectors import children_of, tagged, waiting_on
from runs.validation import parse_json


class StepInline(ReadOnlyMixin, admin.TabularInline):
    model = Step
    extra = 0
    can_delete = False
    ordering = ("seq",)
    fields = ("seq", "kind", "name", "attempt", "output_json", "error_json", "decision_json", "recorded")
    readonly_fields = fields
    verbose_name = "step (checkpoint)"
    verbose_name_plural = "steps (checkpoints)"

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None or check_can_view(me(request), obj, raise_error=False)

    @admin.display(description="recorded")
    def recorded(self, step: Step) -> str:
        return moment(step.created_at, ago=False)

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
    fields = ("approval", "title", "approver", "status", "requested_by", "op", "covers", "decided_by", "decided",
              "note")
    readonly_fields = fields

    @admin.display(description="decided at")
    def decided(self, approval: Approval) -> str:
        return moment(approval.decided_at)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None or check_can_view(me(request), obj, raise_error=False)

    @admin.display(description="approval")
    def approval(self, approval: Approval) -> str:
        url = reverse("admin:runs_approval_change", args=[approval.pk])
        action = "decide" if approval.status == ApprovalStatus.PENDING else "open"
        return format_html('<a href="{}">{}</a> ({})', url, approval.approval_id, action)


class ErrorCodeFilter(admin.SimpleListFilter):
    """Failed runs by the code of their error."""

    title = "error code"
    parameter_name = "error_code"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        codes = (Run.objects.filter(status=RunStatus.FAILED).exclude(error__code=None)
                 .values_list("error__code", flat=True).distinct())
        return [(code, code) for code in sorted({c for c in codes if isinstance(c, str)})]

    def queryset(self, request: HttpRequest, queryset: Any) -> Any:
        return queryset.filter(error__code=self.value()) if self.value() else queryset


@admin.register(Run)
class RunAdmin(ReadOnlyMixin, StartRunMixin, admin.ModelAdmin):
    list_display = ("id", "workflow", "status", "started_by", "started", "pending_approvals", "error_code")
    list_filter = ("status", WaitingForFilter, ErrorCodeFilter, "workflow", "started_by", TagFilter)
    search_fields = ("id", "tags__value")
    search_help_text = ("Search by run id, by a value the run was tagged with (ctx.tag): an order number, a customer; "
                        "or by a tag, key=value: order=1001")
    date_hierarchy = "created_at"
    ordering = ("-created_at", "-id")
    list_per_page = 50
    inlines = (ApprovalInline, StepInline)
    change_form_template = "admin/runs/run/change_form.html"
    missing_noun = "run"
    actions = ("cancel_selected", "rerun_selected")
    fieldsets = (
        (None, {"fields": (("id", "workflow", "status"), ("started_by", "groups"), ("waiting_for", "wakes"),
                           "waiting_detail", "app_version")}),
        ("Related runs", {"fields": ("parent_link", "children_links")}),
        ("When", {"fields": (("started", "updated", "ended"),)}),
        ("Input", {"fields": ("input_json",)}),
        ("Outcome", {"fields": ("result_json", "error_json")}),
        ("Ledger", {"fields": ("ledger_chain",)}),
        ("Lease", {"fields": ("lease_owner", "lease_until", "signal_gen"), "classes": ("collapse",)}),
    )
    readonly_fields = ("input_json", "result_json", "error_json", "ledger_chain", "waiting_detail", "parent_link",
                       "children_links", "started", "updated", "ended", "wakes")

    @admin.display(description="started", ordering="created_at")
    def started(self, run: Run) -> str:
        return moment(run.created_at)

    @admin.display(description="updated")
    def updated(self, run: Run) -> str:
        return moment(run.updated_at)

    @admin.display(description="ended")
    def ended(self, run: Run) -> str:
        return moment(run.ended_at)

    @admin.display(description="wakes at")
    def wakes(self, run: Run) -> str:
        return moment(run.wake_at)

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

    def get_search_results(self, request: HttpRequest, queryset: Any, search_term: str) -> tuple[Any, bool]:
        """Django's search (run id, tag values), and `key=value` terms matching a tag exactly."""
        tags, rest = tag_terms(search_term)
        for key, value in tags:
            queryset = tagged(queryset, key, value)
        return super().get_search_results(request, queryset, rest)

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
            return format_html("its child run {}{}", run_link(waiting["run_id"]),
                               format_html(" until {}", moment(run.wake_at)) if run.wake_at else "")
        elif waiting["kind"] == "paused":
            why = f' ({waiting["reason"]}, paused by {waiting["by"]})' if waiting.get("reason") else ""
            what = f'the unpause of {waiting["target"]}{why}'
        elif waiting["kind"] == "approval":
            what = ", ".join(f'{a["title"]} ({a["approver"]})' for a in waiting["approvals"]) or "an approval"
        else:
            what = waiting["kind"]
        return format_html("{}{}", what, format_html(" until {}", moment(run.wake_at)) if run.wake_at else "")

    @admin.display(description="started by run")
    def parent_link(self, run: Run) -> str:
        if run.parent_id is None:
            return "-"
        return run_link(run.parent_id)

    @admin.display(description="child runs")
    def children_links(self, run: Run) -> str:
        children = children_of(run)
        if not children:
            return "-"
        return format_html_join(", ", "{} ({}, {})",
                                ((run_link(c["id"]), c["workflow"], c["status"]) for c in children))

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

    @admin.action(description="Rerun selected failed runs")
    def rerun_selected(self, request: HttpRequest, queryset) -> TemplateResponse | None:
        """Asks first, on a page listing what would be rerun (and what would not, and why)."""
        runs = list(queryset.order_by("-created_at"))
        failed = [run for run in runs if run.status == RunStatus.FAILED]
        if request.POST.get("confirmed") != "yes":
            return TemplateResponse(request, "admin/runs/run/rerun_confirm.html", {
                **self.admin_site.each_context(request), "opts": self.opts, "title": "Rerun failed runs?",
                "failed": failed, "skipped": [run for run in runs if run.status != RunStatus.FAILED],
                "selected": [run.pk for run in runs], "action_checkbox_name": ACTION_CHECKBOX_NAME,
            })
        done = []
        for run in failed:
            try:
                done.append(recovery.rerun(run_id=run.id, by=me(request)).id)
            except SanomaError as err:
                self.message_user(request, f"{run.id} was not rerun: {refusal(err)}", messages.ERROR)
        if done:
            self.message_user(request, f"Rerun {len(done)} run(s): {', '.join(done)}", messages.SUCCESS)
        return None

    # -- pages

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("start/", wrap(self.start_view), name="runs_run_start"),
            path("<path:object_id>/cancel/", wrap(self.cancel_view), name="runs_run_cancel"),
            path("<path:object_id>/rerun/", wrap(self.rerun_view), name="runs_run_rerun"),
            path("<path:object_id>/message/", wrap(self.message_view), name="runs_run_message"),
            path("<path:object_id>/fork/", wrap(self.fork_view), name="runs_run_fork"),
            path("<path:object_id>/in-doubt/", wrap(self.in_doubt_view), name="runs_run_in_doubt"),
            *super().get_urls(),
        ]

    def changelist_view(self, request: HttpRequest, extra_context: Any = None):
        return super().changelist_view(request, {"live": LIVE_SECONDS, **(extra_context or {})})

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None):
        extra_context = dict(extra_context or {})
        run = self.get_object(request, unquote(object_id))
        if run is not None:
            try:
                records = selectors.ledger_of(run_id=run.id, viewer=me(request))
            except SanomaError:
                records = []
            extra_context.update(
                live=None if run.ended else LIVE_SECONDS,
                ledger_rows=timeline_rows(records),
                graph=graph_of(records, ended=run.ended),
                now=sentence(run, approvals_of(run_id=run.id, viewer=me(request))),
                run_ended=run.ended,
                may_cancel=not run.ended and can_operate(me(request), run),
                may_rerun=run.status == RunStatus.FAILED and can_rerun(me(request)),
                may_fork=run.ended and can_rerun(me(request)),
                rerun_url=reverse("admin:runs_run_rerun", args=[quote(run.pk)]),
                message_url=reverse("admin:runs_run_message", args=[quote(run.pk)]),
                may_message=not run.ended and can_send_message(me(request), run),
                in_doubt=run.status == RunStatus.WAITING and run.waiting_for == "in_doubt",
                in_doubt_url=reverse("admin:runs_run_in_doubt", args=[quote(run.pk)]),
                fork_url=reverse("admin:runs_run_fork", args=[quote(run.pk)]),
                cancel_url=reverse("admin:runs_run_cancel", args=[quote(run.pk)]),
                ledger_list_url=reverse("admin:runs_ledgerrecord_changelist") + "?" + urlencode({"run_id": run.id}),
            )
        return super().change_view(request, object_id, form_url, extra_context)

    def cancel_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        run = self.get_object(request, unquote(object_id))
        if run is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if request.method == "POST" and request.POST.get("confirmed") == "yes":
            try:
                services.cancel(run_id=run.id, by=me(request), reason=request.POST.get("reason", ""))
            except SanomaError as err:
                self.message_user(request, f"{run.id} was not cancelled: {refusal(err)}", messages.ERROR)
            else:
                self.message_user(request, f"Cancelled {run.id}: it makes no further calls", messages.SUCCESS)
            return redirect("admin:runs_run_change", quote(run.pk))
        children = [c for c in children_of(run) if c["status"] not in ("finished", "failed", "cancelled")]
        return TemplateResponse(request, "admin/runs/run/cancel.html", {
            **self.admin_site.each_context(request), "opts": self.opts, "original": run,
            "title": f"Cancel {run.id}?", "children": children, "now": sentence(run, approvals_of(run_id=run.id)),
        })

    def message_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Send the run a message on a topic (what `ctx.wait_message` reads)."""
        run = self.get_object(request, unquote(object_id))
        if run is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if request.method == "POST":
            try:
                payload = parse_json(request.POST.get("payload") or "{}", what="The payload")
                services.send_message(run_id=run.id, topic=request.POST.get("topic", ""), payload=payload,
                                      message_id=request.POST.get("message_id") or None, by=me(request))
            except SanomaError as err:
                self.message_user(request, f"Not sent: {refusal(err)}", messages.ERROR)
            else:
                self.message_user(request, f"Sent to {run.id} on “{request.POST.get('topic')}”", messages.SUCCESS)
        return redirect("admin:runs_run_change", quote(run.pk))


    def rerun_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        run = self.get_object(request, unquote(object_id))
        if run is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if request.method != "POST":
            return redirect("admin:runs_run_change", quote(run.pk))
        try:
            again = recovery.rerun(run_id=run.id, by=me(request))
        except SanomaError as err:
            self.message_user(request, f"{run.id} was not rerun: {refusal(err)}", messages.ERROR)
            return redirect("admin:runs_run_change", quote(run.pk))
        self.message_user(request, f"Rerunning {run.id} as {again.id}", messages.SUCCESS)
        return redirect("admin:runs_run_change", quote(again.pk))

    def fork_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """A page listing the run's steps; forking from one reuses those before it."""
        run = self.get_object(request, unquote(object_id))
        if run is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if request.method == "POST":
            try:
                from_step = int(request.POST.get("from_step", ""))
            except ValueError:
                self.message_user(request, "Choose the step to fork from", messages.ERROR)
                return redirect("admin:runs_run_fork", quote(run.pk))
            try:
                fork = recovery.fork(run_id=run.id, from_step=from_step, by=me(request))
            except SanomaError as err:
                self.message_user(request, f"{run.id} was not forked: {refusal(err)}", messages.ERROR)
                return redirect("admin:runs_run_fork", quote(run.pk))
            self.message_user(request, f"Forked {run.id} from step {from_step} as {fork.id}", messages.SUCCESS)
            return redirect("admin:runs_run_change", quote(fork.pk))
        return TemplateResponse(request, "admin/runs/run/fork.html", {
            **self.admin_site.each_context(request), "opts": self.opts, "original": run,
            "title": f"Fork {run.id} from a step", "steps": list(run.steps.order_by("seq")),
            "may_fork": run.ended and can_rerun(me(request)),
        })


    def in_doubt_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The call a run is in doubt about, and a form to say whether it happened."""
        run = self.get_object(request, unquote(object_id))
        if run is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if request.method == "POST":
            happened = request.POST.get("happened")
            try:
                output = parse_json(request.POST["output"], what="The output") if request.POST.get("output") else None
                recovery.resolve_in_doubt(run_id=run.id, happened={"yes": True, "no": False}.get(happened or ""),
                                          output=output, note=request.POST.get("note", ""), by=me(request))
            except SanomaError as err:
                self.message_user(request, f"Not settled: {refusal(err)}", messages.ERROR)
                return redirect("admin:runs_run_in_doubt", quote(run.pk))
            self.message_user(request, f"Settled the call {run.id} was in doubt about", messages.SUCCESS)
            return redirect("admin:runs_run_change", quote(run.pk))
        intent = recovery.in_doubt_call(run) if run.waiting_for == "in_doubt" else None
        return TemplateResponse(request, "admin/runs/run/in_doubt.html", {
            **self.admin_site.each_context(request), "opts": self.opts, "original": run,
            "title": f"{run.id}: a call in doubt", "intent": intent,
            "step": None if intent is None else run.steps.filter(seq__lt=intent.seq).count(),
        })


def timeline_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ledger as a timeline: in the order things happened (by time, then by step), each with
    how long after the one before it came."""
    ordered = sorted(records, key=lambda r: (r.get("at") or 0, r.get("seq") or 0))
    rows, before = [], None
    for record in ordered:
        at = record.get("at")
        row = timeline_row(record)
        row["after"] = duration(at - before) if at is not None and before is not None else ""
        before = at if at is not None else before
        rows.append(row)
    return rows


def timeline_row(record: dict[str, Any]) -> dict[str, Any]:
    """A ledger record as one line of the run page's timeline."""
    kind = record.get("type", "")
    what: Any = ""
    if kind == "op.called":
        what = f"{record.get('op')} ({record.get('effect')})"
        if record.get("duration_ms") is not None:
            what += f", took {duration(record['duration_ms'])}"
    elif kind.startswith("approval."):
        parts = [record.get("approval", "")]
        for key in ("title", "approver", "by"):
            if record.get(key):
                parts.append(f"{key} {record[key]}")
        what = ", ".join(p for p in parts if p)
    elif kind == "sleep.started":
        what = format_html("until {}", moment(record.get("until"), ago=False))
    elif kind == "op.attempt_failed":
        what = format_html("{} attempt {} failed; next try {}", record.get("op"), record.get("attempt"),
                           moment(record.get("next_at"), ago=False))
    elif kind == "message.received":
        what = f"on “{record.get('topic')}” from {record.get('by')}"
    elif kind in ("run.child_started", "run.child_ended"):
        what = format_html("{} {}", run_link(record.get("child", "")), record.get("workflow") or record.get("status"))
    elif kind == "run.cancelled":
        what = f"by {record.get('by')}" + (f" ({record['because']})" if record.get("because") else "")
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
    return {
        "seq": record.get("seq"), "type": kind, "at": moment(record.get("at"), ago=False), "what": what,
        "decision": decision_text, "error": error_text,
        "group": f"ctx.all member {group['index'] + 1} of {group['size']}" if isinstance(group, dict) else "",
        "body": json.dumps(record, indent=2, sort_keys=True, default=str),
    }
