"""The plain data a policy is asked about, built the same way for a run's call and for `explain`."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from connectors.operations import Operation
from runs.policies.decisions import ApprovalView, PolicyCall, RunInfo


def build_policy_call(
    *, op: Operation, input_json: dict[str, Any], target: str | None, actor: str, groups: Iterable[str],
    run_id: str, workflow: str, approvals: Iterable[Any] = (),
) -> PolicyCall:
    views = tuple(
        ApprovalView(id=a.approval_id, status=a.status, approver=a.approver, covers=tuple(a.covers))
        for a in sorted(approvals, key=lambda a: a.seq)
    )
    return PolicyCall(
        op=op.plain(), effect=op.effect, target=target, input=input_json, actor=actor, groups=tuple(groups),
        run=RunInfo(id=run_id, workflow=workflow, approvals=views), cover=op.cover(target),
    )
