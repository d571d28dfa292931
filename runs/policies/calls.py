"""The plain data a policy is asked about, built the same way for a run's call and for `explain`."""
from __future__ import annotations

from typing import Any, Iterable

from connectors.errors import InvalidInput, SanomaError, describe_issues, issues_of
from connectors.operations import Operation
from pydantic import ValidationError


def build_policy_call(
    *, op: Operation, input_json: dict[str, Any], target: str | None, actor: str, groups: Iterable[str],
    run_id: str, workflow: str, approvals: Iterable[Any] = (),
) -> Any:
    from runs.policies import ApprovalView, PolicyCall, RunInfo

    views = tuple(
        ApprovalView(id=a.approval_id, status=a.status, approver=a.approver, covers=tuple(a.covers))
        for a in sorted(approvals, key=lambda a: a.seq)
    )
    return PolicyCall(
        op=op.plain(), effect=op.effect, target=target, input=input_json, actor=actor, groups=tuple(groups),
        run=RunInfo(id=run_id, workflow=workflow, approvals=views),
    )


def explain_call(*, config: Any, op_id: str, actor: str, input: Any, workflow: str = "", run_id: str = "",
                 approvals: Iterable[Any] = ()) -> dict[str, Any]:
    """Which policies apply to this call and what they decide, with the current policy files."""
    from runs.approvals.permissions import principal_of
    from runs.policies import explain

    op = config.ops.get(op_id)
    if op is None:
        raise InvalidInput(f"No operation {op_id}; the operations are {', '.join(sorted(config.ops))}",
                           data={"issues": [{"path": ["op"], "message": "unknown operation", "code": "not_found"}]})
    try:
        parsed = op.input.model_validate(input or {})
    except ValidationError as err:
        issues = issues_of(err)
        raise InvalidInput(f"The input to {op_id} does not match its schema: {describe_issues(issues)}",
                           data={"op": op_id, "issues": issues}) from None
    target = op.target(parsed) if op.target else None
    principal = principal_of(actor)
    call = build_policy_call(op=op, input_json=parsed.model_dump(mode="json"), target=target, actor=principal.id,
                             groups=principal.groups, run_id=run_id, workflow=workflow, approvals=approvals)
    return explain(config.policy, call)


def explain_recorded(*, config: Any, run_id: str, seq: int) -> dict[str, Any]:
    """A recorded call explained again: the decision the ledger holds beside today's evaluation."""
    from django.db.models import Q

    from runs.models import Approval, LedgerRecord, Run

    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        raise SanomaError(f"No run {run_id}", code="run_not_found", data={"run_id": run_id})
    record = LedgerRecord.objects.filter(run_id=run_id, seq=seq, kind="op.called").first()
    held = Approval.objects.filter(run=run, op_seq=seq).order_by("seq").first()
    if record is None and held is None:
        raise InvalidInput(f"Run {run_id} has no call numbered {seq}",
                           data={"issues": [{"path": ["seq"], "message": "no such call", "code": "not_found"}]})
    op_id = record.body["op"] if record else held.op
    input_json = record.body["input"] if record else held.op_input
    # The approvals the call was decided with: those asked for before it, and its own holds.
    approvals = Approval.objects.filter(Q(seq__lt=seq) | Q(op_seq=seq), run=run)
    out = explain_call(config=config, op_id=op_id, actor=run.started_by, input=input_json, workflow=run.workflow,
                       run_id=run.id, approvals=approvals)
    out["recorded"] = record.body.get("decision") if record else None
    out["seq"] = seq
    return out
