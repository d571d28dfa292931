"""Child runs: the built-in operation a policy sees when a workflow starts another run, and the
rules of the child's id.

`ctx.start_run(workflow, input)` is a call like any other: the policy is asked about the action
`sanoma.run.start` (effect `write`), its target the child's run id, its input the child's
workflow and input, so a company can hold or deny starting a workflow from another one. It goes
through the call pipeline (`runs.engine.calls`) with `ChildStart` as its effect: the child's row
is written with the step that started it (`run.child_started`).
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from connectors.errors import ErrorCode, InvalidInput, IssueCode, SanomaError, error_to_dict, input_issue
from connectors.operations import Operation
from runs.config.versioning import version_of
from runs.engine import clock
from runs.engine.segment import Checkpoint, Segment
from runs.errors import RunCode
from runs.models import Approval, LedgerKind, Run, RunStatus, StepKind
from runs.policies.decisions import Decision
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
            data={"issues": [input_issue(["run_id"], "too long", IssueCode.TOO_LONG)]})
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
        return SanomaError(f"Child run {child.id} was cancelled", code=RunCode.RUN_CANCELLED,
                           data={"child": child.id}, name="RunCancelledError")
    recorded = child.error or {}
    data = dict(recorded.get("data") or {})
    data["child"] = child.id
    return SanomaError(f"Child run {child.id} failed: {recorded.get('message', 'no message')}",
                       code=recorded.get("code"), data=data,
                       name=recorded.get("name"))


class ChildStart:
    """The effect of `ctx.start_run` in the call pipeline: the child run is started."""

    pausable = False  # a pause holds a workflow's new runs when they start, not their parent

    def __init__(self, segment: Segment, workflow: str, input: dict[str, Any], run_id: Any) -> None:
        self.segment, self.workflow, self.input, self.run_id = segment, workflow, input, run_id
        self.about = {"workflow": workflow}
        self.child_id = ""

    def replay(self, output: Any) -> str:
        started: str = output["run_id"]
        return started

    def prepare(self, seq: int) -> tuple[dict[str, Any], str | None]:
        self.child_id = child_run_id(self.segment.run.id, seq, self.run_id)
        return {"workflow": self.workflow, "input": self.input, "run_id": self.child_id}, self.child_id

    def refuse(self, seq: int, decision: Decision, error: SanomaError, approval: Approval | None) -> None:
        self._record(seq, decision, error=error, approval=approval)

    def carry_out(self, seq: int, decision: Decision) -> str:
        parent = self.segment.run
        error: SanomaError | None = None
        if Run.objects.filter(pk=self.child_id).exists():
            error = SanomaError(f"Run {self.child_id} already exists; start the child with another run_id",
                                code=RunCode.RUN_EXISTS, data={"run_id": self.child_id})
        else:
            try:
                check_depth(parent)
            except SanomaError as err:
                error = err
        if error is not None:
            self._record(seq, decision, error=error)
            raise error
        now = clock.now()
        # The child runs its own workflow's code, on the deploy its parent is advanced by.
        child = Run(id=self.child_id, workflow=self.workflow,
                    app_version=version_of(self.segment.config, self.workflow), input=self.input,
                    started_by=parent.started_by, groups=list(parent.groups or ()), parent_id=parent.id,
                    status=RunStatus.QUEUED, created_at=now, updated_at=now, queued_at=now)
        self._record(seq, decision, child=child)
        return self.child_id

    def _record(self, seq: int, decision: Decision, *, error: SanomaError | None = None,
                approval: Approval | None = None, child: Run | None = None) -> None:
        """The step and its `run.child_started` record: the child started with it, or the error."""
        decided = decision.to_dict()
        body: dict[str, Any] = {"op": START_RUN.id, "effect": START_RUN.effect, "child": self.child_id,
                                "workflow": self.workflow, "input": self.input, "decision": decided}
        if approval is not None:
            body["approval"] = approval.approval_id
        if error is not None:
            body["error"] = error_to_dict(error)
            step = self.segment.step(seq, StepKind.CALL, START_RUN.id, error=body["error"], decision=decided)
        else:
            step = self.segment.step(seq, StepKind.CALL, START_RUN.id, output={"run_id": self.child_id},
                                     decision=decided)
        record = self.segment.record(LedgerKind.CHILD_STARTED, seq, body)
        self.segment.commit(Checkpoint(step, [record], child=child))
