"""The runs: the list, the run page (steps, approvals, the ledger as a timeline), cancelling."""
from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import quote, unquote
from django.core.paginator import Page
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.html import format_html, format_html_join

from connectors.errors import InvalidInput, IssueCode, SanomaError
from runs import ledger, recovery, services
from runs.admin.base import LIVE_SECONDS, ReadOnlyMixin, is_staff, me, refusal, run_link
from runs.admin.common import pretty_json
from runs.admin.compare import CompareRunsMixin
from runs.admin.in_doubt import field_issues, in_doubt_sent
from runs.admin.now import sentence
from runs.admin.pruned import pruned_run_redirect
from runs.admin.run_filters import (
    WAITING_LABELS,
    IndexedValuesFilter,
    TagFilter,
    VersionFilter,
    WaitingForFilter,
    tag_terms,
)
from runs.admin.run_inlines import ApprovalInline, StepInline
from runs.admin.run_list import BoundedPaginator, RunChangeList, page_asked
from runs.admin.run_page import message_form, one_snapshot, page_context, run_urls, unread_topic
from runs.admin.start import StartRunMixin
from runs.approvals.permissions import (
    can_operate,
    can_rerun,
    can_send_message,
    check_can_view,
    is_operator,
    visible_runs,
)
from runs.approvals.selectors import (
    nobody_decides_approval,
    pending_of,
    states_of,
    with_pending_count,
)
from runs.direct_calls.workflow import CALL_WORKFLOW
from runs.display import moment, moment_column
from runs.models import Run, RunStatus
from runs.sandbox.admin import SandboxFilter, SandboxStartMixin, badge
from runs.sandbox.selectors import sandbox_run_ids
from runs.sandbox.services import check_if_ended
from runs.selectors import children_of, failed_error_codes, made_from, steps_before, steps_of, tagged, waiting_on
from runs.validation import parse_json


class ErrorCodeFilter(admin.SimpleListFilter):
    """Failed runs by the code of their error."""

    title = "error code"
    parameter_name = "error_code"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(code, code) for code in failed_error_codes()]

    def queryset(self, request: HttpRequest, queryset: Any) -> Any:
        return queryset.filter(error__code=self.value()) if self.value() else queryset


class KeysFirstPaginator(BoundedPaginator):
    """The runs list of a person who sees the runs granted to her (no operator): a page's keys
    are read first, sorted from the runs alone, then that page's runs with their pending counts.
    Read in one query, each run she may see would have its row and its pending count read before
    the sort kept fifty of them."""

    def page(self, number: Any) -> Any:
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        top = bottom + self.per_page
        if top + self.orphans >= self.count:
            top = self.count
        runs: Any = self.object_list
        keys = list(runs.values_list("pk", flat=True)[bottom:top])
        rows = {run.pk: run for run in with_pending_count(Run.objects.filter(pk__in=keys))}
        return Page([rows[key] for key in keys if key in rows], number, self)


class SortedByIndexList(RunChangeList):
    """The runs list sorted only by the columns of `RunAdmin.sortable_by`: a hand-made `?o=` naming
    another column is ignored (the list keeps its default order) rather than sorting every run."""

    def get_ordering_field(self, field_name: Any) -> Any:
        if self.sortable_by is not None and field_name not in self.sortable_by:
            return None
        return super().get_ordering_field(field_name)

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        shown = list(self.result_list)
        sandboxes = sandbox_run_ids(run.pk for run in shown)  # the page's sandbox runs, in one read
        for run in shown:
            run.is_sandbox = run.pk in sandboxes


@admin.register(Run)
class RunAdmin(ReadOnlyMixin, StartRunMixin, SandboxStartMixin, CompareRunsMixin, admin.ModelAdmin):
    # The sandbox badge last: a column's number is its place in `?o=` (bookmarked sorts keep theirs).
    list_display = ("id", "workflow", "status", "started_by", "started", "pending_approvals", "error_code",
                    "sandbox_badge")
    list_filter = ("status", WaitingForFilter, ErrorCodeFilter, ("workflow", IndexedValuesFilter),
                   ("started_by", IndexedValuesFilter), TagFilter, VersionFilter, SandboxFilter)
    search_fields = ("id", "tags__value")
    search_help_text = ("Search by run id, by a value the run was tagged with (ctx.tag): an order number, a customer; "
                        "or by a tag, key=value: order=1001")
    date_hierarchy = "created_at"
    ordering = ("-created_at", "-id")
    # "started by" and "pending approvals" do not sort: sorted by either, a page of the list reads
    # and sorts every run the viewer may see (the pending count is a subquery per run; the starter is
    # sorted with the start time after it), 0.4-2.4 s at 100,000 runs. Who started a run is a filter
    # ("By started by") and a search; a run's pending approvals show in the Waiting filter's
    # "approval" and in the inbox. The default order (newest first) reads its index.
    sortable_by = ("id", "workflow", "status", "started")
    list_per_page = 50
    # Counted by RunChangeList, up to 10,000 past the page shown (Django's would count every run).
    show_full_result_count = False
    inlines = (ApprovalInline, StepInline)
    change_form_template = "admin/runs/run/change_form.html"
    missing_noun = "run"
    actions = ("cancel_selected", "rerun_selected", "compare_two")
    fieldsets = (
        (None, {"fields": (("id", "workflow", "status"), ("started_by", "groups"), ("waiting_for_words", "wakes"),
                           "waiting_detail", "app_version")}),
        ("Related runs", {"fields": ("parent_link", "children_links")}),
        ("When", {"fields": (("started", "updated", "ended"),)}),
        ("Input", {"fields": ("input_json",)}),
        ("Outcome", {"fields": ("result_json", "error_json")}),
        ("Ledger", {"fields": ("ledger_chain",)}),
        ("Lease", {"fields": ("lease_owner", "lease_until", "signal_gen"), "classes": ("collapse",)}),
    )
    readonly_fields = ("input_json", "result_json", "error_json", "ledger_chain", "waiting_detail", "waiting_for_words",
                       "parent_link",
                       "children_links", "started", "updated", "ended", "wakes")

    started = moment_column("created_at", "started")
    updated = moment_column("updated_at", "updated", sortable=False)
    ended = moment_column("ended_at", "ended", sortable=False)
    wakes = moment_column("wake_at", "wakes at", sortable=False)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_staff(request)

    def has_view_permission(self, request: HttpRequest, obj: Run | None = None) -> bool:
        if not is_staff(request):
            return False
        return obj is None or check_can_view(me(request), obj, raise_error=False)

    def get_queryset(self, request: HttpRequest):
        return with_pending_count(visible_runs(me(request)))

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[RunChangeList]:
        return SortedByIndexList

    def get_paginator(self, request: HttpRequest, queryset: Any, per_page: int, orphans: int = 0,
                      allow_empty_first_page: bool = True) -> BoundedPaginator:
        made = BoundedPaginator if is_operator(me(request)) else KeysFirstPaginator
        return made(queryset, per_page, page=page_asked(request), orphans=orphans,
                    allow_empty_first_page=allow_empty_first_page)

    def get_search_results(self, request: HttpRequest, queryset: Any, search_term: str) -> tuple[Any, bool]:
        """Django's search (run id, tag values), and `key=value` terms matching a tag exactly."""
        tags, rest = tag_terms(search_term)
        for key, value in tags:
            queryset = tagged(queryset, key, value)
        return super().get_search_results(request, queryset, rest)

    @admin.display(description="sandbox")
    def sandbox_badge(self, run: Run) -> str:
        """A sandbox run's badge (the list reads which of its page's runs are, in one read)."""
        return badge() if getattr(run, "is_sandbox", False) else ""

    @admin.display(description="pending approvals")
    def pending_approvals(self, run: Run) -> int:
        return getattr(run, "pending_count", 0)

    @admin.display(description="error")
    def error_code(self, run: Run) -> str:
        if not run.error:
            return ""
        return run.error.get("code") or run.error.get("name") or "error"

    @admin.display(description="waiting for")
    def waiting_for_words(self, run: Run) -> str:
        """What the run waits for, in the run list filter's words ("a word on a call in doubt")."""
        return WAITING_LABELS.get(run.waiting_for, run.waiting_for) or "-"

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
            pending = pending_of(run)
            said = [format_html("{} ({}){}", a.title, a.approver, format_html(
                        ' <span class="sanoma-nobody">nobody can decide this: {}, {}</span>', a.approver, nobody)
                        if (nobody := nobody_decides_approval(a)) else "") for a in pending]
            if not said:
                return "an approval"
            return format_html("{}{}", format_html_join(", ", "{}", ((s,) for s in said)),
                               format_html(" until {}", moment(run.wake_at)) if run.wake_at else "")
        elif waiting["kind"] == "in_doubt":
            what = f'{WAITING_LABELS["in_doubt"]}: {waiting.get("op")} (step {waiting.get("seq")})'
        else:
            what = WAITING_LABELS.get(waiting["kind"], waiting["kind"])
        return format_html("{}{}", what, format_html(" until {}", moment(run.wake_at)) if run.wake_at else "")

    @admin.display(description="started by run")
    def parent_link(self, run: Run) -> str:
        if run.parent_id is not None:
            return run_link(run.parent_id)
        source = made_from(run)  # a rerun or a fork is made from a run, not started by one
        if source is None:
            return "-"
        # Not started by a run: made from one, by a person (who, where the record says).
        by = format_html(" by {}", source["by"]) if source.get("by") else ""
        if source["act"] == "fork":
            return format_html("none (forked from {} at step {}{})", run_link(source["run_id"]),
                               source["from_step"], by)
        return format_html("none (a rerun of {}{})", run_link(source["run_id"]), by)

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
        records = f"{result.records} record{'' if result.records == 1 else 's'}"
        return f"verified: {records}, each linked to the one before by its SHA-256"

    # -- actions

    @admin.action(description="Cancel selected runs…")
    def cancel_selected(self, request: HttpRequest, queryset) -> TemplateResponse | None:
        """Asks first, on a page listing what would be cancelled (and what not, and why), and why."""
        runs = list(queryset.order_by("-created_at"))
        who = me(request)
        unended = [run for run in runs if not run.ended and can_operate(who, run)]
        skipped = [(run, "it has ended" if run.ended else "you may not cancel it")
                   for run in runs if run.ended or not can_operate(who, run)]
        reason, problem = request.POST.get("reason", ""), ""
        if request.POST.get("confirmed") == "yes":
            try:
                why = services.check_reason(reason)
            except SanomaError as err:
                problem = err.message
            else:
                cancelled = []
                for run in unended:
                    try:
                        services.cancel(run_id=run.id, by=who, reason=why)
                    except SanomaError as err:
                        self.message_user(request, f"{run.id} was not cancelled: {refusal(err)}", messages.ERROR)
                    else:
                        cancelled.append(run.id)
                if cancelled:
                    self.message_user(request, f"Cancelled {len(cancelled)} run(s): {', '.join(cancelled)}",
                                      messages.SUCCESS)
                return None
        return TemplateResponse(request, "admin/runs/run/cancel_selected.html", {
            **self.admin_site.each_context(request), "opts": self.opts, "title": "Cancel runs?",
            "unended": unended, "skipped": skipped, "reason": reason, "problem": problem,
            "selected": [run.pk for run in runs], "action_checkbox_name": ACTION_CHECKBOX_NAME,
        }, status=400 if problem else 200)

    @admin.action(description="Rerun selected failed runs…")
    def rerun_selected(self, request: HttpRequest, queryset) -> TemplateResponse | None:
        """Asks first, on a page listing what would be rerun with the calls each makes again and
        their effects (and what would not be rerun, and why)."""
        runs = list(queryset.order_by("-created_at"))
        who = me(request)
        failed = [run for run in runs if run.status == RunStatus.FAILED]
        if request.POST.get("confirmed") != "yes":
            plans, refused = [], []
            for run in failed:
                try:
                    plans.append(recovery.check_rerun(run_id=run.id, by=who))
                except SanomaError as err:
                    refused.append((run, refusal(err)))
            return TemplateResponse(request, "admin/runs/run/rerun_confirm.html", {
                **self.admin_site.each_context(request), "opts": self.opts, "title": "Rerun failed runs?",
                "plans": plans, "refused": refused,
                "skipped": [run for run in runs if run.status != RunStatus.FAILED],
                "selected": [run.pk for run in runs], "action_checkbox_name": ACTION_CHECKBOX_NAME,
            })
        done = []
        for run in failed:
            try:
                done.append(recovery.rerun(run_id=run.id, by=who).id)
            except SanomaError as err:
                self.message_user(request, f"{run.id} was not rerun: {refusal(err)}", messages.ERROR)
        if done:
            self.message_user(request, f"Rerun {len(done)} run(s): {', '.join(done)}", messages.SUCCESS)
        return None

    @admin.action(description="Compare the two selected runs")
    def compare_two(self, request: HttpRequest, queryset) -> HttpResponse | None:
        return self.compare_selected(request, queryset)

    # -- pages

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("start/", wrap(self.start_view), name="runs_run_start"),
            path("sandbox/", wrap(self.sandbox_view), name="runs_run_sandbox"),
            path("<path:object_id>/cancel/", wrap(self.cancel_view), name="runs_run_cancel"),
            path("<path:object_id>/rerun/", wrap(self.rerun_view), name="runs_run_rerun"),
            path("<path:object_id>/message/", wrap(self.message_view), name="runs_run_message"),
            path("<path:object_id>/fork/", wrap(self.fork_view), name="runs_run_fork"),
            path("<path:object_id>/in-doubt/", wrap(self.in_doubt_view), name="runs_run_in_doubt"),
            path("<path:object_id>/compare/", wrap(self.compare_view), name="runs_run_compare"),
            *super().get_urls(),
        ]

    def changelist_view(self, request: HttpRequest, extra_context: Any = None):
        return super().changelist_view(request, {"live": LIVE_SECONDS, **(extra_context or {})})

    def _get_obj_does_not_exist_redirect(self, request: HttpRequest, opts: Any, object_id: str) -> HttpResponse:
        # A run retention removed: its pruned row, with what happened to it (for who may read those).
        return pruned_run_redirect(request, unquote(object_id)) or super()._get_obj_does_not_exist_redirect(
            request, opts, object_id)

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None) -> Run | None:
        """The run, read once per request: the page and everything on it say what that one read saw."""
        read: dict[tuple[str, str | None], Run | None] = request.__dict__.setdefault("_sanoma_runs_read", {})
        key = (object_id, from_field)
        if key not in read:
            read[key] = super().get_object(request, object_id, from_field)
        return read[key]

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None):
        if request.method not in ("GET", "HEAD"):
            return super().change_view(request, object_id, form_url, extra_context)
        check_if_ended(run_id=unquote(object_id), viewer=me(request))  # a sandbox run's checks, written once
        with one_snapshot():
            run = self.get_object(request, unquote(object_id))
            context = dict(extra_context or {})
            if run is not None:
                context.update(page_context(run=run, viewer=me(request), live_seconds=LIVE_SECONDS))
            response = super().change_view(request, object_id, form_url, context)
            if isinstance(response, TemplateResponse):
                response.render()  # the inlines' reads too, in the same snapshot
        return response

    def _page(self, request: HttpRequest, run: Run, template: str, title: str, status: int = 200,
              **context: Any) -> TemplateResponse:
        return TemplateResponse(request, f"admin/runs/run/{template}", {
            **self.admin_site.each_context(request), "opts": self.opts, "original": run, "title": title,
            **run_urls(run), **context,
        }, status=status)

    def cancel_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Cancelling asks why: the reason is required, and goes to the `run.cancelled` record."""
        run = self.get_object(request, unquote(object_id))
        if run is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        reason, problem = request.POST.get("reason", ""), ""
        if request.method == "POST" and request.POST.get("confirmed") == "yes":
            try:
                services.cancel(run_id=run.id, by=me(request), reason=reason)
            except InvalidInput as err:
                problem = err.message  # said beside the reason; what was typed stays
            except SanomaError as err:
                self.message_user(request, f"{run.id} was not cancelled: {refusal(err)}", messages.ERROR)
                return redirect("admin:runs_run_change", quote(run.pk))
            else:
                self.message_user(request, f"Cancelled {run.id}: it makes no further calls", messages.SUCCESS)
                return redirect("admin:runs_run_change", quote(run.pk))
        children = [c for c in children_of(run) if c["status"] not in ("finished", "failed", "cancelled")]
        pending = pending_of(run)
        return self._page(request, run, "cancel.html", f"Cancel {run.id}?", status=400 if problem else 200,
                          children=children, pending=list(pending), reason=reason, problem=problem,
                          now=sentence(run, states_of(run)))

    def message_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Send the run a message on a topic (what `ctx.wait_message` reads), through the service the
        API uses. A refusal is said on this page, beside the form, with what was typed kept."""
        run = self.get_object(request, unquote(object_id))
        if run is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        form = message_form(run, request.POST.get("topic", ""))
        typed = {"topic": request.POST.get("topic", form["topic_prefill"]),
                 "payload": request.POST.get("payload") or form["payload_prefill"],
                 "message_id": request.POST.get("message_id", "")}
        problem, issues = "", {}
        if request.method == "POST":
            try:
                try:
                    payload = parse_json(typed["payload"], what="The payload")
                except InvalidInput as err:
                    raise InvalidInput(err.message, data={"issues": [
                        {"path": ["payload"], "message": err.message, "code": IssueCode.INVALID}]}) from None
                services.send_message(run_id=run.id, topic=typed["topic"], payload=payload,
                                      message_id=typed["message_id"] or None, by=me(request))
            except SanomaError as err:
                problem = refusal(err)
                issues = field_issues(err, rename={"id": "message_id"})
            else:
                self.message_user(request, f"Sent to {run.id} on “{typed['topic']}”", messages.SUCCESS)
                if unread := unread_topic(run, typed["topic"]):
                    self.message_user(request, unread, messages.WARNING)
                return redirect("admin:runs_run_change", quote(run.pk))
        return self._page(request, run, "message.html", f"Send {run.id} a message", status=400 if problem else 200,
                          typed=typed, problem=problem, issues=issues, expected=form["expected"],
                          may_message=not run.ended and run.workflow != CALL_WORKFLOW
                          and can_send_message(me(request), run))

    def rerun_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """What a rerun makes live again (every step, with its effect), then, confirmed, the rerun."""
        run = self.get_object(request, unquote(object_id))
        if run is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        try:
            plan = recovery.check_rerun(run_id=run.id, by=me(request))
        except SanomaError as err:
            return self._page(request, run, "rerun.html", f"Rerun {run.id}?", plan=None, problem=refusal(err))
        if request.method == "POST" and request.POST.get("confirmed") == "yes":
            try:
                again = recovery.rerun(run_id=run.id, by=me(request))
            except SanomaError as err:
                self.message_user(request, f"{run.id} was not rerun: {refusal(err)}", messages.ERROR)
                return redirect("admin:runs_run_change", quote(run.pk))
            self.message_user(request, f"Rerunning {run.id} as {again.id}", messages.SUCCESS)
            return redirect("admin:runs_run_change", quote(again.pk))
        return self._page(request, run, "rerun.html", f"Rerun {run.id}?", plan=plan, problem="")

    def fork_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The run's steps, each with a Fork button; a chosen step shows what the fork reuses and what
        it makes live again (with their effects) before it is made."""
        run = self.get_object(request, unquote(object_id))
        if run is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        chosen = request.POST.get("from_step") if request.method == "POST" else request.GET.get("from_step")
        may_fork = run.ended and can_rerun(me(request))
        if chosen is None:
            return self._page(request, run, "fork.html", f"Fork {run.id} from a step",
                              steps=steps_of(run), may_fork=may_fork)
        try:
            from_step = int(chosen)
        except ValueError:
            self.message_user(request, f"Choose the step to fork from (not “{chosen}”)", messages.ERROR)
            return redirect("admin:runs_run_fork", quote(run.pk))
        try:
            plan = recovery.check_fork(run_id=run.id, from_step=from_step, by=me(request))
        except SanomaError as err:
            return self._page(request, run, "fork_confirm.html", f"Fork {run.id} from step {from_step}?",
                              status=400, plan=None, from_step=from_step, problem=refusal(err))
        if request.method == "POST" and request.POST.get("confirmed") == "yes":
            try:
                fork = recovery.fork(run_id=run.id, from_step=from_step, by=me(request))
            except SanomaError as err:
                self.message_user(request, f"{run.id} was not forked: {refusal(err)}", messages.ERROR)
                return redirect("admin:runs_run_fork", quote(run.pk))
            self.message_user(request, f"Forked {run.id} from step {from_step} as {fork.id}", messages.SUCCESS)
            return redirect("admin:runs_run_change", quote(fork.pk))
        return self._page(request, run, "fork_confirm.html", f"Fork {run.id} from step {from_step}?", plan=plan,
                          from_step=from_step, problem="")

    def in_doubt_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The call a run is in doubt about (what was sent, when, whether the vendor was asked), and
        a form to say whether it happened; a refused answer comes back with everything typed kept."""
        run = self.get_object(request, unquote(object_id))
        if run is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        typed = {"happened": "", "output": "", "note": ""}
        errors: dict[str, str] = {}
        status = 200
        if request.method == "POST":
            typed = {name: request.POST.get(name, "") for name in typed}
            errors = self._settle_in_doubt(request, run, typed)
            if not errors:
                self.message_user(request, f"Settled the call {run.id} was in doubt about", messages.SUCCESS)
                return redirect("admin:runs_run_change", quote(run.pk))
            status = 400
        intent = recovery.in_doubt_call(run) if run.waiting_for == "in_doubt" else None
        return TemplateResponse(request, "admin/runs/run/in_doubt.html", {
            **self.admin_site.each_context(request), "opts": self.opts, "original": run,
            "title": f"{run.id}: a call in doubt", "intent": intent,
            "step": None if intent is None else steps_before(run, intent.seq),
            "sent": None if intent is None else in_doubt_sent(run, intent),
            "typed": typed, "errors": errors,
        }, status=status)

    def _settle_in_doubt(self, request: HttpRequest, run: Run, typed: dict[str, str]) -> dict[str, str]:
        """Settle the call as the form says; the refusals by field ("" for the whole form)."""
        errors: dict[str, str] = {}
        if typed["happened"] not in ("yes", "no"):
            errors["happened"] = "Say whether the call happened: tick “It happened” or “It did not happen”."
        output = None
        if typed["output"].strip():
            try:
                output = parse_json(typed["output"], what="The output")
            except SanomaError as err:
                errors["output"] = err.message
        if errors:
            return errors
        try:
            recovery.resolve_in_doubt(run_id=run.id, happened=typed["happened"] == "yes", output=output,
                                      note=typed["note"], by=me(request))
        except SanomaError as err:
            fields = field_issues(err)
            field = next((name for name in ("output", "happened") if name in fields), "")
            errors[field] = f"Not settled: {err.message}" if not field else err.message
        return errors
