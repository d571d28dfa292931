"""Who may decide an approval, and the error a run gets when one is not given."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings

from connectors.errors import SanomaError
from runs.approvals.approver import Approver
from runs.errors import RunCode
from runs.models import Approval, ApprovalRequester, ApprovalStatus

# Who decided an approval the policy itself closed: a deploy's newer policy released the held call,
# or withdrew the hold because it now denies the call (`runs.approvals.rejudge`).
POLICY_ACTOR = "sanoma:policy"


def rejection_error(approval: Approval) -> SanomaError:
    if approval.status == ApprovalStatus.WITHDRAWN:
        return SanomaError(
            f'"{approval.title}" was withdrawn by {approval.decided_by}',
            code=RunCode.APPROVAL_WITHDRAWN,
            data={"title": approval.title, "by": approval.decided_by, "approval_id": approval.approval_id},
            name="WithdrawnError",
        )
    data = {"title": approval.title, "by": approval.decided_by, "approval_id": approval.approval_id}
    if approval.note:
        data["note"] = approval.note
    note = f": {approval.note}" if approval.note else ""
    return SanomaError(
        f'"{approval.title}" was rejected by {approval.decided_by}{note}',
        code=RunCode.APPROVAL_REJECTED,
        data=data,
        name="RejectedError",
    )


SELF_APPROVAL_KEY = "self_approval"  # in a policy approval's details: the policy let the starter decide it
SELF_APPROVAL_ALLOWED = "allowed"


def self_approval_details(details: Any, allowed: bool) -> Any:
    """A policy approval's details, carrying the policy's `self_approval` permission when it gave one."""
    if not allowed:
        return details
    return {**(details if isinstance(details, dict) else {}), SELF_APPROVAL_KEY: SELF_APPROVAL_ALLOWED}


def self_approval_allowed(approval: Approval) -> bool:
    """Whether the run's starter may decide this approval: the site allows it everywhere
    (`SANOMA_ALLOW_SELF_APPROVAL`), or the policy that held the call allowed it for this approval.
    A workflow's own `ctx.approval` cannot allow it: only a policy's permission is read."""
    if getattr(settings, "SANOMA_ALLOW_SELF_APPROVAL", False):
        return True
    details = approval.details
    return (
        approval.requested_by == ApprovalRequester.POLICY
        and isinstance(details, dict)
        and details.get(SELF_APPROVAL_KEY) == SELF_APPROVAL_ALLOWED
    )


def may_decide(
    approver: str, by: str, groups: Sequence[str], *, starter: str | None = None, self_approval: bool = False
) -> str | None:
    """None when `by` (in `groups`) may decide for `approver`, else why not.

    Separation of duties: the run's `starter` may not decide its approvals, even as the approver
    or a member of its group, unless `self_approval` allows it."""
    if starter is not None and by == starter and not self_approval:
        return f"{by} started this run and cannot approve it"
    group = Approver.parse(approver).group
    if group is not None:
        return None if group in groups else f"{by} is not in group {group}"
    return None if by == approver else f"{by} is not the approver; {approver} is"


def lets_through(approval: Approval, decision: Any) -> bool:
    """Whether `approval`, approved, already lets through the call a policy holds again with
    `decision` (an approve): asked of the same approver, and for every hold rule the decision
    names (`decision.policies`), or for no rule in particular (`ctx.approval`, an approval asked
    before rules were kept). An approval asked for another rule of the same approver does not:
    that approver has not seen this hold, so it is asked anew."""
    if approval.status != ApprovalStatus.APPROVED or approval.approver != (decision.approver or ""):
        return False
    asked_for = set(approval.rules or ())
    return not asked_for or set(getattr(decision, "policies", ()) or ()) <= asked_for
