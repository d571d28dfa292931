"""Reads of approvals: the inbox, a run's approvals, what a principal may see."""
from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from runs.approvals.permissions import Principal, decidable_approvals, is_operator, principal_of
from runs.models import Approval, ApprovalStatus
from runs.selectors import visible_run


def approval_state(approval: Approval) -> dict[str, Any]:
    """The approval as the run publishes it."""
    state: dict[str, Any] = {
        "id": approval.approval_id,
        "run_id": approval.run_id,
        "title": approval.title,
        "approver": approval.approver,
        "requested_by": approval.requested_by,
        "covers": list(approval.covers),
        "links": list(approval.links),
        "status": approval.status,
        "requested_at": approval.requested_at.isoformat(),
        "refused": list(approval.refused),
    }
    if approval.details is not None:
        state["details"] = approval.details
    if approval.op:
        state.update(op=approval.op, input=approval.op_input, op_seq=approval.op_seq)
    if approval.status != ApprovalStatus.PENDING:
        decided_at = approval.decided_at.isoformat() if approval.decided_at else None
        state.update(decided_by=approval.decided_by, decided_at=decided_at)
        if approval.note:
            state["note"] = approval.note
        if approval.decided_with:
            state["decided_with"] = approval.decided_with
    return state


def pending_for(*, principal: str | Principal) -> QuerySet[Approval]:
    """The inbox: pending approvals this principal may decide, newest first, in a fixed number of queries."""
    who = principal_of(principal)
    return (
        decidable_approvals(who)
        .filter(status=ApprovalStatus.PENDING)
        .select_related("run")
        .order_by("-requested_at", "-id")
    )


def approvals_of(*, run_id: str, viewer: str | Principal | None = None) -> list[dict[str, Any]]:
    run = visible_run(run_id=run_id, viewer=viewer)
    return [approval_state(a) for a in Approval.objects.filter(run=run).order_by("seq")]


def visible_approvals(*, principal: str | Principal) -> QuerySet[Approval]:
    who = principal_of(principal)
    if is_operator(who):
        return Approval.objects.select_related("run")
    return decidable_approvals(who).select_related("run")
