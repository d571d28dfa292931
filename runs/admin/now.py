"""What a run is doing now, said in one sentence: the top of its page."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils.html import format_html
from django.utils.safestring import SafeString

from runs.admin.base import run_link
from runs.approvals.approver import Approver
from runs.display import moment
from runs.models import Run, RunStatus, Step, StepKind
from runs.selectors import waiting_on
from runs.spend import risk


def cancellation(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The run's `run.cancelled` record among its ledger records, if it was cancelled."""
    return next((r for r in reversed(records) if r.get("type") == "run.cancelled"), None)


def wait_began(run: Run, kind: str) -> datetime:
    """When the run's wait began: its wait step's moment. A message on another topic wakes the run
    and it waits again, replaying the same step: its wait still began then, not at that waking."""
    began = Step.objects.filter(run=run, kind=kind).order_by("-seq").values_list("created_at", flat=True).first()
    return began or run.updated_at


def sentence(run: Run, approvals: list[dict], *, cancelled: dict[str, Any] | None = None) -> SafeString:
    """`Waiting for finance-lead to approve "Refund needs finance" since 14:02 (3 minutes ago).`

    `cancelled`: the run's `run.cancelled` record, which says who cancelled it and why."""
    if run.status == RunStatus.FINISHED:
        return format_html("Finished {}.", moment(run.ended_at))
    if run.status == RunStatus.FAILED:
        error = run.error or {}
        return format_html("Failed {} with {}: {}", moment(run.ended_at), error.get("code") or error.get("name")
                           or "an error", error.get("message", ""))
    if run.status == RunStatus.CANCELLED:
        if cancelled is None:
            return format_html("Cancelled {}.", moment(run.ended_at))
        who = cancelled.get("by") or cancelled.get("actor")
        why = format_html(": “{}”", cancelled["reason"]) if cancelled.get("reason") else ""
        because = format_html(" ({})", cancelled["because"]) if cancelled.get("because") else ""
        return format_html('Cancelled {} by <span class="sanoma-who">{}</span>{}{}.', moment(run.ended_at), who,
                           why, because)
    if run.status == RunStatus.QUEUED:
        if run.waiting_for.startswith("paused "):
            return format_html("Not started: its workflow is paused ({}).", run.waiting_for[len("paused "):])
        return format_html("Queued for a worker since {}.", moment(run.queued_at or run.created_at))
    if run.status == RunStatus.RUNNING:
        return format_html("Running on {} since {}.", run.lease_owner or "a worker", moment(run.updated_at))
    waiting = waiting_on(run) or {}
    kind = waiting.get("kind")
    until = format_html(", until {}", moment(run.wake_at)) if run.wake_at else ""
    if kind == "approval":
        pending = [a for a in approvals if a["status"] == "pending"]
        if pending:
            first = pending[0]
            approver = Approver.parse(first["approver"])
            who = f"someone in group {approver.name}" if approver.is_group else approver.name
            waiting_since = format_html("Waiting for {} to approve “{}” since {}.", who, first["title"],
                                        moment(datetime.fromisoformat(first["requested_at"])))
            at_risk = risk.sentence((first.get("details") or {}).get("money"))  # a held money call
            if at_risk:
                return format_html('{} <span class="sanoma-at-risk" id="run-at-risk">{}.</span>', waiting_since,
                                   at_risk)
            return waiting_since
        return format_html("Waiting for an approval.")
    if kind == "message":
        return format_html("Waiting for a message on “{}”{} (since {}).", waiting.get("topic"), until,
                           moment(wait_began(run, StepKind.WAIT)))
    if kind == "run":
        return format_html("Waiting for its child run {} to end{} (since {}).", run_link(waiting.get("run_id") or ""),
                           until, moment(wait_began(run, StepKind.RUN_WAIT)))
    if kind == "sleep":
        return format_html("Asleep until {}.", moment(run.wake_at))
    if kind == "retry":
        return format_html("Waiting to try a call again at {}: the vendor refused it (see the ledger).",
                           moment(run.wake_at))
    if kind == "in_doubt":
        return format_html("In doubt about {} (step {}): an operator must say whether it happened.",
                           waiting.get("op"), waiting.get("seq"))
    if kind == "paused":
        reason = f": {waiting['reason']}" if waiting.get("reason") else ""
        return format_html("Held by the pause of {}{} (since {}).", waiting.get("target"), reason,
                           moment(run.updated_at))
    return format_html("Waiting ({}){}.", run.waiting_for or "for something", until)
