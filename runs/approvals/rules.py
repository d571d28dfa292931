"""Who may decide an approval, and the error a run gets when one is not given."""
from __future__ import annotations

from collections.abc import Sequence

from connectors.errors import SanomaError
from runs.models import Approval, ApprovalStatus


def rejection_error(approval: Approval) -> SanomaError:
    if approval.status == ApprovalStatus.WITHDRAWN:
        return SanomaError(
            f'"{approval.title}" was withdrawn by {approval.decided_by}',
            code="approval_withdrawn",
            data={"title": approval.title, "by": approval.decided_by, "approval_id": approval.approval_id},
            name="WithdrawnError",
        )
    data = {"title": approval.title, "by": approval.decided_by, "approval_id": approval.approval_id}
    if approval.note:
        data["note"] = approval.note
    note = f": {approval.note}" if approval.note else ""
    return SanomaError(
        f'"{approval.title}" was rejected by {approval.decided_by}{note}',
        code="approval_rejected",
        data=data,
        name="RejectedError",
    )


def may_decide(approver: str, by: str, groups: Sequence[str]) -> str | None:
    """None when `by` (in `groups`) may decide for `approver`, else why not."""
    if approver.startswith("group:"):
        group = approver[len("group:"):]
        return None if group in groups else f"{by} is not in group {group}"
    return None if by == approver else f"{by} is not the approver; {approver} is"
