"""The plain data a policy is asked about, built the same way for a run's call and for `explain`."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from connectors.operations import Operation
from runs.policies.decisions import ApprovalView, PolicyCall, RunInfo


def build_policy_call(
    *, op: Operation, input_json: dict[str, Any], target: str | None, actor: str, groups: Iterable[str],
    run_id: str, workflow: str, approvals: Iterable[Any] = (), spent: Mapping[str, Any] | None = None,
) -> PolicyCall:
    """The call as a policy sees it. A money operation naming its amount adds `money` (the amount
    and currency of this call) and `spent` (what was spent before it, `runs.spend.sums`)."""
    views = tuple(
        ApprovalView(id=a.approval_id, status=a.status, approver=a.approver, covers=tuple(a.covers),
                     rules=tuple(getattr(a, "rules", None) or ()))
        for a in sorted(approvals, key=lambda a: a.seq)
    )
    found = op.money_of(input_json) if op.effect == "money" else None
    money = None if found is None else {"cents": found.cents, "currency": found.currency or ""}
    return PolicyCall(
        op=op.plain(), effect=op.effect, target=target, input=input_json, actor=actor, groups=tuple(groups),
        run=RunInfo(id=run_id, workflow=workflow, approvals=views), cover=op.cover(target), money=money,
        spent=spent if money is not None else None,
    )
