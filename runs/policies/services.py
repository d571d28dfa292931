"""Explaining a call to an operator: which policies apply and what they decide, with today's files.

The same policy data a run's call is decided on (`runs.policies.calls`), for a call described by
hand (`explain_call`) or one a run recorded (`explain_recorded`, beside the decision on record).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Q
from pydantic import ValidationError

from connectors.errors import InvalidInput, IssueCode, SanomaError, describe_issues, input_issue, issues_of
from runs.approvals.permissions import principal_of
from runs.engine import clock
from runs.errors import RunCode
from runs.models import Approval, LedgerKind, LedgerRecord, Run
from runs.policies.calls import build_policy_call
from runs.policies.explain import explain
from runs.spend import services as spend


def explain_call(*, config: Any, op_id: str, actor: str, input: Any, workflow: str = "", run_id: str = "",
                 approvals: Iterable[Any] = (), seq: int = -1) -> dict[str, Any]:
    """Which policies apply to this call and what they decide, with the current policy files."""
    op = config.ops.get(op_id)
    if op is None:
        raise InvalidInput(f"No operation {op_id}; the operations are {', '.join(sorted(config.ops))}",
                           data={"issues": [input_issue(["op"], "unknown operation", IssueCode.NOT_FOUND)]})
    try:
        parsed = op.input.model_validate(input or {})
    except ValidationError as err:
        issues = issues_of(err)
        raise InvalidInput(f"The input to {op_id} does not match its schema: {describe_issues(issues)}",
                           data={"op": op_id, "issues": issues}) from None
    target = op.target(parsed) if op.target else None
    principal = principal_of(actor)
    input_json = parsed.model_dump(mode="json")
    # A money call is explained with what was spent before it, as its run would be decided now.
    counted = spend.money_call(op=op, input_json=input_json, run_id=run_id, seq=seq, workflow=workflow,
                               starter=principal.id)
    spent = spend.sums_for(counted, now=clock.now(), ops=config.ops) if counted is not None else None
    call = build_policy_call(op=op, input_json=input_json, target=target, actor=principal.id,
                             groups=principal.groups, run_id=run_id, workflow=workflow, approvals=approvals,
                             spent=spent)
    return explain(config.policy, call)


def explain_recorded(*, config: Any, run_id: str, seq: int) -> dict[str, Any]:
    """A recorded call explained again: the decision the ledger holds beside today's evaluation."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        raise SanomaError(f"No run {run_id}", code=RunCode.RUN_NOT_FOUND, data={"run_id": run_id})
    record = LedgerRecord.objects.filter(run_id=run_id, seq=seq, kind=LedgerKind.OP_CALLED).first()
    held = Approval.objects.filter(run=run, op_seq=seq).order_by("seq").first()
    if record is None and held is None:
        raise InvalidInput(f"Run {run_id} has no call numbered {seq}",
                           data={"issues": [input_issue(["seq"], "no such call", IssueCode.NOT_FOUND)]})
    if record is not None:
        op_id, input_json = record.body["op"], record.body["input"]
    else:
        assert held is not None  # no record and no hold was refused above
        op_id, input_json = held.op, held.op_input
    # The approvals the call was decided with: those asked for before it, and its own holds.
    approvals = Approval.objects.filter(Q(seq__lt=seq) | Q(op_seq=seq), run=run)
    out = explain_call(config=config, op_id=op_id, actor=run.started_by, input=input_json, workflow=run.workflow,
                       run_id=run.id, approvals=approvals, seq=seq)
    out["recorded"] = record.body.get("decision") if record else None
    out["seq"] = seq
    return out
