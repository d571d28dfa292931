"""The approvals inbox, and an approval's page where it is approved, rejected or withdrawn."""
from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.contrib.admin.views.main import ChangeList
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from connectors.errors import SanomaError
from runs.admin.base import LIVE_SECONDS, ReadOnlyMixin, is_staff, me, refusal, run_link
from runs.admin.common import as_json
from runs.approvals import selectors as approval_selectors
from runs.approvals import services as approvals
from runs.approvals.extras import extras_of
from runs.approvals.permissions import check_can_view, is_operator
from runs.display import ids_shortened, moment, moment_column, tokens
from runs.models import Approval, ApprovalStatus
from runs.sandbox.admin import badge
from runs.sandbox.selectors import sandbox_data, sandbox_of, sandbox_run_ids
from runs.selectors import Counted, bounded_count
from runs.spend import risk as spend_risk

# How long the approval page waits for the run to apply a decision before saying it is still pending.
DECIDE_WAIT_SECONDS = 5.0


class ApprovalStatusFilter(admin.SimpleListFilter):
    """Pending by default: the inbox. `All` shows what was decided too."""

    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any):
        return [(s.value, s.label) for s in ApprovalStatus] + [("all", "All")]

    def value(self) -> str:
        return super().value() or ApprovalStatus.PENDING

    def choices(self, changelist: Any):
        for lookup, title in self.lookup_choices:
            yield {
                "selected": self.value() == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request: HttpRequest, queryset):
        value = self.value()
        return queryset if value == "all" else queryset.filter(status=value)


# The inbox's foot counts up to this many approvals ("more than 100 approvals" past it).
INBOX_COUNT_BOUND = 100
# `?after=<approval>`: the inbox's page that follows that approval (newest first).
AFTER_VAR = "after"


class InboxChangeList(ChangeList):
    """The inbox's list, paged by key (newest first, `?after=` the last approval shown), never by
    counting: a page reads its rows and one more (is there a next page?), and the foot counts at
    most `INBOX_COUNT_BOUND` + 1 approvals. Django's list counts every approval that matches for its
    page numbers and reads further down a long inbox with an OFFSET; an approver holding thousands
    would pay for all of them on each page (and the inbox reads itself again every few seconds).
    The list is always newest first (its columns do not sort: a page by key follows one order)."""

    def get_filters_params(self, params: Any = None) -> Any:
        found = super().get_filters_params(params)
        found.pop(AFTER_VAR, None)
        return found

    def get_query_string(self, new_params: Any = None, remove: Any = None) -> str:
        """Links to another filter or search start again at the newest."""
        new_params = new_params or {}
        if AFTER_VAR not in new_params:
            new_params = {**new_params, AFTER_VAR: None}
        return super().get_query_string(new_params, remove)

    def get_results(self, request: HttpRequest) -> None:
        self.after = self._after(request)
        rows = self.queryset
        if self.after is not None:
            at, pk = self.after
            rows = rows.filter(Q(requested_at__lt=at) | Q(requested_at=at, pk__lt=pk))
        per_page = self.list_per_page
        # The page's keys first (the sort reads only the approvals, not their runs' rows), then its
        # rows with their runs: joined before the sort, every run of the inbox would be read.
        keys = list(rows.values_list("pk", flat=True)[: per_page + 1])
        found = list(Approval.objects.select_related("run").filter(pk__in=keys).order_by("-requested_at", "-id"))
        sandboxes = sandbox_run_ids({approval.run_id for approval in found})  # marked in the run column
        for approval in found:
            approval.in_sandbox = approval.run_id in sandboxes  # type: ignore[attr-defined]
        self.result_list = found[:per_page]
        self.has_next = len(found) > per_page
        self.counted: Counted = bounded_count(self.queryset, bound=INBOX_COUNT_BOUND)
        self.result_count = self.counted.n
        self.full_result_count = self.result_count
        self.show_full_result_count = False
        self.can_show_all = False
        self.multi_page = self.has_next or self.after is not None
        self.paginator = self.model_admin.get_paginator(request, self.result_list, per_page)
        self.next_url = self.get_query_string({AFTER_VAR: self.result_list[-1].pk}) if self.has_next else ""
        self.newest_url = self.get_query_string() if self.after is not None else ""

    def _after(self, request: HttpRequest) -> tuple[Any, int] | None:
        """The approval `?after=` names, as its (requested_at, key); None (the newest page) when it
        names none, and when it names no approval of this inbox (said on the page)."""
        raw = request.GET.get(AFTER_VAR)
        if raw is None:
            return None
        found = None
        if raw.isascii() and raw.isdigit() and len(raw) < 19:
            found = self.root_queryset.filter(pk=int(raw)).values_list("requested_at", "pk").first()
        if found is None:
            messages.error(request, f"No approval of your inbox to page after (after={raw[:40]!r}): showing the newest")
        return found


class DecisionForm(forms.Form):
    note = forms.CharField(required=False, strip=True, widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
                           help_text="Recorded with the decision, in the ledger.")


@admin.register(Approval)
class ApprovalAdmin(ReadOnlyMixin, admin.ModelAdmin):
    missing_noun = "approval"
    # What an approver needs to tell one row from another: what the call does (its summary, else the
    # approval's title), the money, the run and who started it, the call itself, and when it was asked.
    list_display = ("title_link", "amount", "run_column", "started_by", "requested", "approver", "lets_through",
                    "status")
    list_display_links = None
    list_filter = (ApprovalStatusFilter,)
    list_select_related = ("run",)
    ordering = ("-requested_at", "-id")
    # Newest first, always: the inbox pages by key on this order (see `InboxChangeList`), so its
    # columns do not sort.
    sortable_by = ()
    search_fields = ("title", "run__id")
    search_help_text = "Search by title or run id"
    actions = None

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_staff(request)

    def has_view_permission(self, request: HttpRequest, obj: Approval | None = None) -> bool:
        if not is_staff(request):
            return False
        return obj is None or check_can_view(me(request), obj.run, raise_error=False)

    def get_list_display(self, request: HttpRequest):
        """Without the status column while the inbox shows what waits (every row is pending)."""
        shown = super().get_list_display(request)
        if request.GET.get(ApprovalStatusFilter.parameter_name, ApprovalStatus.PENDING) == ApprovalStatus.PENDING:
            return tuple(name for name in shown if name != "status")
        return shown

    def get_queryset(self, request: HttpRequest):
        """The inbox: what this user may decide, as `/api/approvals` and the header's badge answer it
        (an operator or a superuser is no one's approver by being one); the status filter narrows it."""
        return approval_selectors.inbox(principal=me(request), status=None)

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[InboxChangeList]:
        return InboxChangeList

    def get_object(self, request: HttpRequest, object_id: str, from_field: Any = None) -> Approval | None:
        """An approval's page is open to whoever may see its run: its approvers, starter, operators."""
        return approval_selectors.visible_approval(principal=me(request), approval_pk=object_id)

    def changelist_view(self, request: HttpRequest, extra_context: Any = None):
        # An empty inbox says so in a sentence, without a search bar counting what was decided ("0 results (1 total)").
        pending_view = request.GET.get(ApprovalStatusFilter.parameter_name, ApprovalStatus.PENDING) == \
            ApprovalStatus.PENDING
        extra_context = {"title": "Approvals inbox", "live": LIVE_SECONDS, "pending_view": pending_view,
                         **(extra_context or {})}
        return super().changelist_view(request, extra_context)

    def _held(self, approval: Approval) -> dict[str, Any]:
        return approval_selectors.held_call(approval)  # the config's operations: this process's, read once

    @admin.display(description="approval", ordering="title")
    def title_link(self, approval: Approval) -> str:
        """The held call in its operation's words, linked to the approval's page; under it the
        approval's title, and what other apps link it to (a merge: its change)."""
        url = reverse("admin:runs_approval_change", args=[approval.pk])
        said = self._held(approval)["summary"]
        head = (format_html('<a href="{}"><strong class="sanoma-summary">{}</strong></a>', url,
                            ids_shortened(said)) if said
                else format_html('<a href="{}">{}</a>', url, approval.title))
        under = [approval.title] if said else []
        links = [format_html('<a class="sanoma-extra" href="{}">{}</a>', extra.link[1], extra.link[0])
                 for extra in extras_of(approval, full=False) if extra.link]
        tail = format_html_join(" · ", "{}", ((p,) for p in [*under, *links]))
        return format_html('{}<div class="sanoma-under">{}</div>', head, tail) if tail else head

    @admin.display(description="amount")
    def amount(self, approval: Approval) -> str:
        money = self._held(approval)["amount"]
        if not money:
            return "-"
        shown = format_html('<span class="sanoma-money">{}</span>', money["shown"])
        spent = spend_risk.spent_said(spend_risk.of_approval(approval))  # a held money call: the day's spend
        return format_html('{}<div class="sanoma-under sanoma-spent">{}</div>', shown, spent) if spent else shown

    @admin.display(description="run")
    def run_column(self, approval: Approval) -> str:
        marked = format_html(" {}", badge()) if getattr(approval, "in_sandbox", False) else ""
        return format_html('{}{} ({})<div class="sanoma-under">{}</div>', run_link(approval.run_id), marked,
                           approval.approval_id, approval.run.workflow)

    @admin.display(description="started by", ordering="run__started_by")
    def started_by(self, approval: Approval) -> str:
        return approval.run.started_by

    requested = moment_column("requested_at", "asked")

    @admin.display(description="lets through")
    def lets_through(self, approval: Approval) -> str:
        """The held operation, and its input as JSON when its summary does not say it in words (the
        approval's page always shows the input whole); then, in words, the later calls of the run
        the approval lets through too (`covers_said`)."""
        parts = []
        if approval.op and self._held(approval)["summary"]:
            parts.append(format_html("<code>{}</code>", tokens(approval.op)))
        elif approval.op:
            parts.append(format_html("<code>{}</code> {}", tokens(approval.op),
                                     tokens(json.dumps(approval.op_input, sort_keys=True, default=str))))
        covers = approval_selectors.covers_said(approval)
        if covers:
            parts.append(format_html('<span class="sanoma-covers">{}</span>', tokens(covers)))
        if not parts:
            return "nothing further (a workflow approval)"
        return format_html_join(format_html("<br>"), "{}", ((p,) for p in parts))

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None):
        approval = self.get_object(request, unquote(object_id))
        if approval is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if request.method == "POST":
            return self._act(request, approval)
        principal = me(request)
        why_not = None
        if approval.status == ApprovalStatus.PENDING:
            try:
                approvals.check_decide(run_id=approval.run_id, approval_id=approval.approval_id,
                                       decision="approve", by=principal)
            except SanomaError as err:
                why_not = refusal(err)
        may_withdraw = approval.status == ApprovalStatus.PENDING and not approval.run.ended and (
            approval.run.started_by == principal.id or principal.has_global("runs.operate_runs")
        )
        queued = [{"decision": m.decision, "by": m.by, "sent_at": moment(m.sent_at)}
                  for m in approval_selectors.queued_decisions(approval)]
        held = approval_selectors.held_call(approval)
        extras = extras_of(approval, full=True)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": approval.title,
            "subtitle": f"{approval.approval_id} of run {approval.run_id}",
            "original": approval,
            "approval": approval,
            "state": approval_selectors.approval_state(approval),
            "state_json": as_json(approval_selectors.approval_state(approval)),
            "op_input_json": as_json(approval.op_input) if approval.op else "",
            "summary": held["summary"],
            "covers_said": approval_selectors.covers_said(approval),
            "amount": held["amount"],
            "extras": extras,
            "extra_links": [extra.link for extra in extras if extra.link],
            "requested_at": moment(approval.requested_at),
            "decided_at": moment(approval.decided_at),
            "decided_said": approval_selectors.decided_said(approval),
            "details_json": as_json(approval.details) if approval.details is not None else "",
            "spent_said": spend_risk.spent_said(spend_risk.of_approval(approval)),
            "links": [
                {"href": str(link), "web": str(link).startswith(("https://", "http://"))} for link in approval.links
            ],
            "run_url": reverse("admin:runs_run_change", args=[quote(approval.run_id)]),
            "inbox_url": reverse("admin:runs_approval_changelist"),
            "form": DecisionForm(),
            "may_decide": approval.status == ApprovalStatus.PENDING and why_not is None,
            "why_not": why_not,
            "may_withdraw": may_withdraw,
            "queued": queued,
            "is_operator": is_operator(principal),
            "sandbox": sandbox_data(sandbox_of(approval.run)),
        }
        return TemplateResponse(request, "admin/runs/approval/decide.html", context)

    def _act(self, request: HttpRequest, approval: Approval) -> HttpResponse:
        form = DecisionForm(request.POST)
        note = form.cleaned_data.get("note", "") if form.is_valid() else ""
        where = f"{approval.approval_id} of run {approval.run_id}"
        try:
            if "_withdraw" in request.POST:
                approvals.withdraw(run_id=approval.run_id, approval_id=approval.approval_id, by=me(request),
                                   reason=note)
                self.message_user(request, f"Withdrew {where}: the run will stop waiting for it", messages.SUCCESS)
            elif "_approve" in request.POST or "_reject" in request.POST:
                decision = "approve" if "_approve" in request.POST else "reject"
                state = approvals.decide(run_id=approval.run_id, approval_id=approval.approval_id, decision=decision,
                                         note=note, by=me(request), timeout=DECIDE_WAIT_SECONDS)
                if state["status"] == ApprovalStatus.PENDING:
                    self.message_user(
                        request,
                        f"Your decision ({decision}) on {where} was sent, still pending "
                        "(the run will apply it when a worker runs)",
                        messages.WARNING,
                    )
                else:
                    self.message_user(request, f"Decided: {where} is {state['status']} by {state.get('decided_by')}",
                                      messages.SUCCESS)
            else:
                self.message_user(request, "Choose Approve, Reject or Withdraw", messages.ERROR)
        except SanomaError as err:
            self.message_user(request, f"Not done: {refusal(err)}", messages.ERROR)
        return HttpResponseRedirect(request.path)
