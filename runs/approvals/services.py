"""Deciding and withdrawing approvals: the services the admin, the API and `manage.py decide` call.

A decision is a message to the run, keyed by its message id: the run applies the first valid one
in arrival order, records `approval.decided`, and goes on. `decide` refuses up front what the run
would refuse, then waits a while for the run to read the decision.
"""
from __future__ import annotations

import time
import uuid
from typing import Any

from django.db import IntegrityError, transaction

from connectors.errors import ErrorCode, InvalidInput, IssueCode, SanomaError, input_issue
from runs import ledger
from runs.approvals.permissions import Principal, can_decide, principal_of
from runs.approvals.rules import may_decide, self_approval_allowed
from runs.approvals.selectors import approval_state
from runs.config.registry import get_config
from runs.engine import clock
from runs.engine.advance import wake
from runs.errors import RunCode
from runs.models import (
    ENDED_STATUSES,
    Approval,
    ApprovalStatus,
    Decision,
    DecisionMessage,
    LedgerKind,
    MessageOutcome,
    Run,
)
from runs.selectors import visible_run

WAIT_POLLS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5)


def _run_for_decision(run_id: str, by: Principal, *, for_update: bool = False, seen: Run | None = None) -> Run:
    """The run, if `by` may see it (else `run_not_found`, first), and if it still takes decisions.
    `seen`: the run as the caller already read it through `visible_run`."""
    run = seen if seen is not None else visible_run(run_id=run_id, viewer=by, for_update=for_update)
    if run.status in ENDED_STATUSES:
        raise SanomaError(f"Run {run_id} has {run.status}; it takes no more decisions", code=RunCode.RUN_ENDED,
                          data={"status": run.status, "run_id": run_id})
    return run


def _target(run: Run, approval_id: str | None) -> Approval:
    approvals = Approval.objects.filter(run=run)
    approval = (
        approvals.filter(approval_id=approval_id).first() if approval_id
        else approvals.filter(status=ApprovalStatus.PENDING).order_by("seq").first()
    )
    if approval is None:
        what = f"no approval {approval_id}" if approval_id else "nothing pending"
        raise SanomaError(f"Run {run.id} has {what} to decide", code=RunCode.NO_PENDING_APPROVAL,
                          data={"run_id": run.id, "approval_id": approval_id})
    return approval


def _already_decided(approval: Approval) -> SanomaError:
    return SanomaError(
        f"{approval.approval_id} of run {approval.run_id} was already {approval.status} by {approval.decided_by}",
        code=RunCode.ALREADY_DECIDED,
        data={"status": approval.status, "decided_by": approval.decided_by, "approval_id": approval.approval_id},
    )


def check_decide(*, run_id: str, approval_id: str | None, decision: Any, by: Principal,
                 seen: Run | None = None) -> Approval:
    """Everything `decide` refuses, before anything is sent; first, a run `by` may not see."""
    run = _run_for_decision(run_id, by, seen=seen)
    if decision not in Decision.values:
        issue = input_issue(["decision"], "must be approve or reject", IssueCode.INVALID)
        raise InvalidInput(f"decision must be approve or reject; got {decision!r}", data={"issues": [issue]})
    approval = _target(run, approval_id)
    if approval.status != ApprovalStatus.PENDING:
        raise _already_decided(approval)
    why = may_decide(approval.approver, by.id, by.groups, starter=run.started_by,
                     self_approval=self_approval_allowed(approval))
    if why is None and not can_decide(by, approval):
        why = f"{by.id} has no permission to decide it"
    if why is not None:
        raise SanomaError(f"{why} ({approval.approval_id})", code=RunCode.NOT_APPROVER,
                          data={"run_id": run.id, "approval_id": approval.approval_id, "approver": approval.approver})
    return approval


def send_decision(
    *, approval: Approval, decision: str, by: Principal, note: str = "", message_id: str | None = None
) -> str:
    """Queue a decision message for the run and wake it; a repeated message id is queued once."""
    message_id = message_id or uuid.uuid4().hex
    with transaction.atomic():
        try:
            with transaction.atomic():
                DecisionMessage.objects.create(
                    approval=approval, message_id=message_id, decision=decision, by=by.id, groups=list(by.groups),
                    note=note or "", sent_at=clock.now(),
                )
        except IntegrityError:
            return message_id
        wake(approval.run_id)
    return message_id


def decide(
    *,
    run_id: str,
    decision: str,
    by: str | Principal,
    note: str = "",
    approval_id: str | None = None,
    message_id: str | None = None,
    timeout: float = 30.0,
) -> dict[str, Any]:
    """Approve or reject; returns the approval as the run decided it, or still pending when the
    run did not read the decision within `timeout` (it applies once a worker runs)."""
    principal = principal_of(by)
    run = visible_run(run_id=run_id, viewer=principal)  # first: a run `by` may not see is run_not_found
    if note is not None and not isinstance(note, str):
        raise InvalidInput(
            "note must be text", data={"issues": [input_issue(["note"], "must be text", IssueCode.INVALID)]}
        )
    if message_id is not None and (not isinstance(message_id, str) or not message_id.strip()):
        raise InvalidInput("message id must be a non-blank string",
                           data={"issues": [input_issue(["id"], "must be non-blank", IssueCode.INVALID)]})
    approval = check_decide(run_id=run_id, approval_id=approval_id, decision=decision, by=principal, seen=run)
    sent = send_decision(approval=approval, decision=decision, by=principal, note=note or "", message_id=message_id)
    return wait_for_decision(approval=approval, message_id=sent, timeout=timeout)


def wait_for_decision(*, approval: Approval, message_id: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + max(0.0, timeout)
    polls = iter(WAIT_POLLS)
    while True:
        approval.refresh_from_db()
        if approval.status != ApprovalStatus.PENDING:
            if approval.decided_with == message_id:
                return approval_state(approval)
            raise _already_decided(approval)
        message = DecisionMessage.objects.filter(approval=approval, message_id=message_id).first()
        if message is not None and message.outcome == MessageOutcome.REFUSED:
            reason = next((r["reason"] for r in reversed(approval.refused) if r.get("id") == message_id), "refused")
            raise SanomaError(f"{reason} ({approval.approval_id})", code=RunCode.NOT_APPROVER,
                              data={"run_id": approval.run_id, "approval_id": approval.approval_id,
                                    "approver": approval.approver})
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return approval_state(approval)
        time.sleep(min(next(polls, 1.0), remaining))


def withdraw(*, run_id: str, by: str | Principal, approval_id: str | None = None, reason: str = "") -> dict[str, Any]:
    """The run's starter or an operator takes back a pending approval; the run gets `approval_withdrawn`."""
    principal = principal_of(by)
    config = get_config()
    with transaction.atomic():
        run = _run_for_decision(run_id, principal)
        if run.started_by != principal.id and not principal.has_global("runs.operate_runs"):
            raise SanomaError(
                f"{principal.id} may not withdraw approvals of run {run_id}: only its starter or an operator may",
                code=ErrorCode.PERMISSION_DENIED, data={"run_id": run_id},
            )
        approval = _target(run, approval_id)
        now = clock.now()
        changed = Approval.objects.filter(pk=approval.pk, status=ApprovalStatus.PENDING).update(
            status=ApprovalStatus.WITHDRAWN, decided_by=principal.id, decided_at=now, note=reason or "",
        )
        if not changed:
            approval.refresh_from_db()
            raise _already_decided(approval)
        body = {"approval": approval.approval_id, "by": principal.id}
        if reason:
            body["reason"] = reason
        ledger.append(ledger.build(run, kind=LedgerKind.APPROVAL_WITHDRAWN, seq=approval.seq,
                                   key=approval.approval_id, body=body, app=config.app_name, actor=principal.id))
        wake(run.id)
    approval.refresh_from_db()
    return approval_state(approval)


