"""Child runs: the built-in operation a policy sees when a workflow starts another run, and the
rules of the child's id.

`ctx.start_run(workflow, input)` is a call like any other: the policy is asked about the action
`sanoma.run.start` (effect `write`), its target the child's run id, its input the child's
workflow and input, so a company can hold or deny starting a workflow from another one.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from connectors.errors import ErrorCode, InvalidInput, SanomaError
from connectors.operations import Operation
from runs.models import Run, RunStatus
from runs.validation import MAX_RUN_ID_LENGTH, check_run_id

# Deeper than this, a run starting runs is taken for a workflow that starts itself without end.
MAX_DEPTH = 20


class StartRunInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    workflow: str
    input: dict[str, Any]
    run_id: str


class StartRunOutput(BaseModel):
    run_id: str


START_RUN = Operation(
    id="sanoma.run.start",
    vendor="sanoma",
    resource="run",
    name="start",
    effect="write",
    input=StartRunInput,
    output=StartRunOutput,
    idempotent=True,
    description="Start another run as a child of this one (ctx.start_run)",
    target=lambda parsed: parsed.run_id,
)


def child_run_id(parent_id: str, seq: int, given: Any) -> str:
    """The child's id: the one given (checked by the run-id rule), or `<parent>.<seq>`."""
    if given is not None:
        return check_run_id(given, path=("run_id",))
    run_id = f"{parent_id}.{seq}"
    if len(run_id) > MAX_RUN_ID_LENGTH:
        raise InvalidInput(
            f"ctx.start_run: the child's id {parent_id[:40]}....{seq} would be longer than {MAX_RUN_ID_LENGTH} "
            "characters; pass run_id=",
            data={"issues": [{"path": ["run_id"], "message": "too long", "code": "too_long"}]})
    return run_id


def depth_of(run: Run) -> int:
    """How many parents the run has (stops counting past MAX_DEPTH)."""
    depth, parent_id = 0, run.parent_id
    while parent_id is not None and depth <= MAX_DEPTH:
        depth += 1
        parent_id = Run.objects.filter(pk=parent_id).values_list("parent_id", flat=True).first()
    return depth


def check_depth(run: Run) -> None:
    if depth_of(run) >= MAX_DEPTH:
        raise SanomaError(
            f"Run {run.id} is {MAX_DEPTH} runs deep in child runs; a workflow that starts itself needs an end",
            code=ErrorCode.INVALID_INPUT, data={"depth": MAX_DEPTH})


def ended_error(child: Run) -> SanomaError:
    """The error `ctx.wait_run` raises for a child that failed (a copy keeping its code) or was cancelled."""
    if child.status == RunStatus.CANCELLED:
        return SanomaError(f"Child run {child.id} was cancelled", code=ErrorCode.RUN_CANCELLED,
                           data={"child": child.id}, name="RunCancelledError")
    recorded = child.error or {}
    data = dict(recorded.get("data") or {})
    data["child"] = child.id
    return SanomaError(f"Child run {child.id} failed: {recorded.get('message', 'no message')}",
                       code=recorded.get("code"), data=data,
                       name=recorded.get("name"))
