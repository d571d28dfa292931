"""The run context `ctx`: what a workflow's `run(ctx, input)` is given.

The workflow function runs from the top on every advance. A call whose step is recorded returns
the recorded result (or raises the recorded error) without touching the vendor; the first call
without a record does its work, writes its checkpoint and ledger record in one transaction, and
goes on. A wait that is not satisfied raises `Suspend`, which ends the advance; a later advance
replays to the same point and finds the wait satisfied.

`RunContext` is only the workflow's face: its built-ins and the vendors' operations. Each
built-in is checked the same way first (`builtin`: called from code the outline shows, declared
by the workflow, the advance still open), then handed to the engine's parts: the advance's
`Segment` (steps, lease, commits), the call pipeline (`runs.engine.calls`), holds and approvals
(`runs.engine.holds`) and the two-step waits (`runs.engine.waits`).
"""
from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Concatenate, NoReturn, ParamSpec, TypeVar

from pydantic import BaseModel

from connectors.errors import ErrorCode, InvalidInput, IssueCode, SanomaError, input_issue
from connectors.operations import Operation
from runs.config import outline
from runs.config.workflows import Approved, WorkflowDefinition
from runs.engine import children, clock, continuation, waits
from runs.engine.calls import Calls
from runs.engine.holds import Holds
from runs.engine.requests import (
    as_model,
    check_approval_request,
    check_call_options,
    check_patch_name,
    check_result_model,
    check_sleep,
    check_tags,
    check_wait_message,
    check_wait_run,
)
from runs.engine.segment import APPROVAL, Checkpoint, Segment
from runs.engine.stops import Suspend
from runs.errors import RunCode
from runs.models import Approval, ApprovalRequester, DecisionMessage, LedgerKind, LedgerRecord, Run, StepKind
from runs.telemetry import metrics
from runs.validation import validate_input

P = ParamSpec("P")
R = TypeVar("R")


def builtin(name: str, *, declared: bool = True, needs_open: bool = True,
            ) -> Callable[[Callable[Concatenate[RunContext, P], R]], Callable[Concatenate[RunContext, P], R]]:
    """What every built-in checks before it does anything: it is called from code the workflow's
    outline shows; the workflow declares it (unless every workflow has it: `declared=False`);
    the advance still takes calls (unless it writes nothing itself: `needs_open=False`)."""

    def wrap(method: Callable[Concatenate[RunContext, P], R]) -> Callable[Concatenate[RunContext, P], R]:
        @functools.wraps(method)
        def checked(self: RunContext, /, *args: P.args, **kwargs: P.kwargs) -> R:
            self._segment.flush()  # a call's checkpoint waiting behind is written before anything else
            self._check_in_outline(name, sys._getframe(1))
            if declared and name not in self._definition.builtins:
                raise self._not_available((name,))
            if needs_open:
                self._segment.check_open()
            return method(self, *args, **kwargs)

        return checked

    return wrap


class RunContext:
    """What a workflow's `run(ctx, input)` is given."""

    def __init__(self, segment: Segment, *, definition: WorkflowDefinition, approvals: Iterable[Approval] = (),
                 messages: Iterable[DecisionMessage] = (), attempts: Sequence[LedgerRecord] = ()) -> None:
        self._segment = segment
        self._definition = definition
        self._config = segment.config
        self._uses = set(definition.ops)
        self._resolved: dict[tuple[str, ...], Any] = {}
        self._holds = Holds(segment, approvals, messages)
        self._calls = Calls(segment, self._holds, attempts)
        self._in_all = False
        # The last seq the run recorded anything at before this advance (a step, an approval, a
        # call it began): a `ctx.patched` before it belongs to a run recorded before the patch.
        history = self._calls.history
        self._recorded_until = max((*segment.steps, *self._holds.approvals, *history.attempts, *history.doubts,
                                    *(a.op_seq for a in self._holds.approvals.values() if a.op_seq is not None)),
                                   default=0)

    # ---- the built-ins ----------------------------------------------------------------------

    @property
    def run_id(self) -> str:
        return self._segment.run.id

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._resolve((name,))

    @builtin("now", declared=False)
    def now(self) -> datetime:
        """The current time, recorded: a replay sees the same value."""
        segment = self._segment
        seq = segment.take_seq()
        step = segment.replayed(seq, StepKind.NOW, "now")
        if step is not None:
            assert step.output is not None  # a recorded `now` always has its moment
            return clock.from_ms(step.output["at"])
        segment.check_time()
        at = clock.now_ms()
        segment.commit(Checkpoint(segment.step(seq, StepKind.NOW, "now", output={"at": at})))
        return clock.from_ms(at)

    @builtin("tag", declared=False)
    def tag(self, **keys: Any) -> None:
        """Tag the run with business keys to find it by (`ctx.tag(order="1001", customer="ada@...")`):
        recorded (`run.tagged`), searchable in the run list. Tagging a key again replaces its value."""
        segment = self._segment
        tags = check_tags(keys)
        seq = segment.take_seq()
        if segment.replayed(seq, StepKind.TAG, "tag") is not None:
            return
        segment.check_time()
        step = segment.step(seq, StepKind.TAG, "tag", output={"tags": tags})
        segment.commit(Checkpoint(step, [segment.record(LedgerKind.RUN_TAGGED, seq, {"tags": tags})], tags=tags))

    @builtin("patched", declared=False)
    def patched(self, name: str) -> bool:
        """Whether this run takes the new path of a change made on purpose (`if ctx.patched("name"):
        new code, else: the old`): True for a run that reaches it on code that has it (recorded as a
        patch step), False for a run recorded before the patch was there. The False answer takes
        no step, so the old path's recorded steps keep their numbers and the run replays."""
        segment = self._segment
        name = check_patch_name(name)
        seq = segment.next_seq
        while (step := segment.steps.get(seq)) is not None and step.kind == StepKind.PATCH:
            if step.name == name:
                segment.next_seq = seq + 1  # any patch steps before it were retired from the code
                return bool((step.output or {}).get("patched"))
            seq += 1
        if seq <= self._recorded_until:
            return False  # the run went past this point before the patch: it keeps the old path
        seq = segment.take_seq()
        segment.check_time()
        segment.commit(Checkpoint(segment.step(seq, StepKind.PATCH, name, output={"patched": True})))
        return True

    @builtin("continue_as_new", declared=False)
    def continue_as_new(self, input: Any = None) -> NoReturn:
        """Start the run afresh with `input` (a dict or a model): see `runs.engine.history`."""
        continuation.continue_as_new(self._segment, self._definition, input, in_all=self._in_all)

    @builtin("sleep")
    def sleep(self, until: Any = None, **duration: Any) -> None:
        """Wait until a moment (`until`: ISO 8601 with an offset, epoch ms, or an aware datetime)
        or for a duration (`ms`, `seconds`, `minutes`, `hours`, `days`, summed)."""
        segment = self._segment
        until_ms, total_ms = check_sleep(until, duration)
        seq = segment.take_seq()
        step = segment.replayed(seq, StepKind.SLEEP, "sleep")
        if step is None:
            segment.check_time()
            started = clock.now_ms()
            until_ms = until_ms if until_ms is not None else started + int(total_ms)
            record = segment.record(LedgerKind.SLEEP_STARTED, seq, {"until": until_ms})
            step = segment.step(seq, StepKind.SLEEP, "sleep", output={"until": until_ms})
            segment.commit(Checkpoint(step, [record]))
        assert step.output is not None  # a recorded sleep always has its end
        until_ms = step.output["until"]
        now_ms = clock.now_ms()
        if now_ms < until_ms:
            raise Suspend("sleep", wake_at=clock.from_ms(until_ms))
        if segment.replay_until is None and seq in segment.steps and seq == max(segment.steps):
            # the sleep was the run's last step: this advance is the one its deadline woke
            metrics.woke((now_ms - until_ms) / 1000)

    @builtin("wait_message")
    def wait_message(self, topic: str, timeout: Any = None, *, model: Any = None) -> Any:
        """Wait for the next message sent to this run on `topic` and return its payload (a JSON
        object), or with `model` (a pydantic model class) the payload parsed by it. Messages are
        read in the order they arrived; one sent before the wait is kept for it. With `timeout`
        (seconds, or a timedelta) the wait raises `wait_timed_out` once that deadline passes
        without a message. No process is held while it waits.

        Two steps: the wait's start (its topic and deadline, so a replay keeps the same deadline)
        and the message it read (its payload, so a replay returns the same one)."""
        segment = self._segment
        topic, timeout_ms = check_wait_message(topic, timeout)
        check_result_model(f"ctx.wait_message({topic!r})", model)
        step = waits.wait_steps(segment, StepKind.WAIT, StepKind.MESSAGE, topic, timeout_ms, {"topic": topic},
                                read=lambda seq, until: waits.read_message(segment, topic, seq, until))
        assert step.output is not None  # a message read always has its payload
        payload: dict[str, Any] = step.output["payload"]
        return as_model(f"the message on {topic!r}", payload, model)

    @builtin("start_run")
    def start_run(self, workflow: str | WorkflowDefinition, input: Any = None, run_id: str | None = None) -> str:
        """Start a run of `workflow` (its name, or its definition) as a child of this one and return
        its id (`<this run>.<seq>` unless `run_id` is given); the input is a dict or a model. The
        child runs as this run's starter and records this run as its parent. Starting it is a call
        the policy sees (`sanoma.run.start`, target the child's id, input its workflow and input),
        recorded as `run.child_started`; the child's row is written in the same transaction, so a
        replay returns the same child and never starts a second one."""
        if isinstance(workflow, WorkflowDefinition):
            workflow = workflow.name
        definition = self._config.workflows.get(workflow) if isinstance(workflow, str) else None
        if definition is None:
            raise InvalidInput(
                f"ctx.start_run: no workflow {workflow!r}; "
                f"the workflows are {', '.join(sorted(self._config.workflows))}",
                data={"issues": [input_issue(["workflow"], "no such workflow", IssueCode.NOT_FOUND)]})
        input = {} if input is None else input
        if isinstance(input, BaseModel):
            input = input.model_dump(mode="json")
        validate_input(definition.input, input, name=definition.name)
        started: str = self._calls.through(children.START_RUN,
                                           children.ChildStart(self._segment, definition.name, input, run_id))
        return started

    @builtin("wait_run")
    def wait_run(self, run_id: str, timeout: Any = None, *, model: Any = None) -> Any:
        """Wait for a child run (an id `ctx.start_run` returned) to end and return its output, or
        with `model` (a pydantic model class) the output parsed by it. A child that failed raises a
        copy of its error, keeping its code (its data names the child); a cancelled one raises
        `run_cancelled`. With `timeout` (seconds, or a timedelta) the wait raises `wait_timed_out`
        once that deadline passes. No process is held meanwhile: the child's end wakes this run."""
        segment = self._segment
        run_id, timeout_ms = check_wait_run(run_id, timeout)
        check_result_model(f"ctx.wait_run({run_id!r})", model)

        def check_child() -> None:
            if not Run.objects.filter(pk=run_id, parent_id=segment.run.pk).exists():
                raise InvalidInput(f"ctx.wait_run({run_id!r}): that is not a run this run started; "
                                   "wait for an id ctx.start_run returned",
                                   data={"issues": [
                                       input_issue(["run_id"], "not a child of this run", IssueCode.NOT_CHILD)]})

        step = waits.wait_steps(segment, StepKind.RUN_WAIT, StepKind.RUN_END, run_id, timeout_ms, {"run": run_id},
                                read=lambda seq, until: waits.read_child_end(segment, run_id, seq, until),
                                first=check_child)
        assert step.output is not None  # a child's end read always has its output
        return as_model(f"the output of child run {run_id}", step.output["output"], model)

    @builtin("all", needs_open=False)
    def all(self, members: Any) -> list[Any]:
        """Run zero-argument functions one after another; their records carry the group."""
        if self._in_all:
            raise InvalidInput("ctx.all cannot be nested: call it from run, not from a member")
        if not isinstance(members, (list, tuple)) or not all(callable(m) for m in members):
            raise InvalidInput(
                "ctx.all takes a list of functions without arguments, e.g. ctx.all([lambda: ..., lambda: ...])")
        if not members:
            return []
        segment = self._segment
        group_id = f"all:{segment.next_seq}"
        results = []
        self._in_all = True
        try:
            for index, member in enumerate(members):
                segment.group = {"id": group_id, "index": index, "size": len(members)}
                results.append(member())
        finally:
            self._in_all = False
            segment.group = None
        return results

    @builtin("approval")
    def approval(
        self,
        title: str,
        *,
        approver: Any = None,
        covers: Any = (),
        links: Any = (),
        details: Any = None,
    ) -> Approved:
        """Ask a person (or `group:<name>`) to approve; waits for the decision.

        Raises `approval_rejected` on a rejection and `approval_withdrawn` on a withdrawal.
        """
        approver_id, cover_ids, link_list = check_approval_request(title, approver, covers, links, details)
        seq = self._segment.take_seq()
        self._segment.replayed(seq, APPROVAL, title)  # a step recorded at its seq means the code changed
        approval = self._holds.approvals.get(seq)
        if approval is None:
            self._segment.check_time()
            approval = self._holds.request(
                seq=seq, title=title, approver=approver_id, requested_by=ApprovalRequester.WORKFLOW, covers=cover_ids,
                links=link_list, details=details,
            )
        return self._holds.wait_for(approval)

    # ---- the vendors' operations ------------------------------------------------------------

    def _resolve(self, path: tuple[str, ...]) -> Any:
        """The namespace or operation call at `path`, made once per advance (a loop's calls reuse it)."""
        found = self._resolved.get(path)
        if found is not None:
            return found
        op_id = ".".join(path)
        if op_id in self._uses and op_id in self._config.ops:
            found = _OperationCall(self, self._config.ops[op_id])
        else:
            # An app's collection has one more part than a vendor's operation: `ctx.data.<app>.<name>.<op>`.
            depth = 4 if path[0] == "data" else 3
            if len(path) >= depth or (len(path) == 3 and not any(u.startswith(op_id + ".") for u in self._uses)):
                raise self._not_available(path)
            found = _Namespace(self, path)
        self._resolved[path] = found
        return found

    def _not_available(self, path: tuple[str, ...]) -> SanomaError:
        return SanomaError(
            f"ctx.{'.'.join(path)} is not available: add it to `uses` in workflow \"{self._definition.name}\"",
            code=ErrorCode.INVALID_INPUT,
        )

    def _check_in_outline(self, call: str, frame: Any) -> None:
        """A ctx call from code the workflow's outline does not show (a helper in another file, a
        function that got hold of ctx) fails before anything is decided or called."""
        why = outline.check_call(self._definition, frame, call)
        if why is not None:
            raise SanomaError(why, code=RunCode.CALL_NOT_IN_OUTLINE, data={"call": call})


class _Namespace:
    """`ctx.<vendor>.<resource>.<op>`: attribute paths ending in an operation the workflow uses."""

    def __init__(self, ctx: RunContext, path: tuple[str, ...]) -> None:
        self._ctx = ctx
        self._path = path

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._ctx._resolve((*self._path, name))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise self._ctx._not_available(self._path)


class _OperationCall:
    """`ctx.<vendor>.<resource>.<op>(input)`: one call of an operation the workflow uses."""

    def __init__(self, ctx: RunContext, op: Operation) -> None:
        self._ctx = ctx
        self._op = op

    def __call__(self, payload: Any = None, *, timeout: Any = None, retry: Any = None, **options: Any) -> Any:
        self._ctx._segment.flush()  # the previous call's checkpoint, if it waits behind: written first
        if options:
            # A keyword the engine does not know would otherwise be dropped without a word.
            names = ", ".join(sorted(options))
            raise InvalidInput(
                f"ctx.{self._op.id} got an unknown keyword argument: {names}; pass the input as one object "
                "(the call takes only timeout= and retry= besides)",
                data={"op": self._op.id, "issues": [
                    input_issue([name], "unknown keyword argument", IssueCode.UNKNOWN_KEYWORD)
                    for name in sorted(options)]},
            )
        self._ctx._check_in_outline(self._op.id, sys._getframe(1))
        return self._ctx._calls.call(self._op, payload, check_call_options(self._op, timeout, retry))


if TYPE_CHECKING:
    from runs.ctx import Ctx

    def _typed_as_documented(ctx: RunContext) -> Ctx:
        """mypy holds the engine's ctx to the typed `Ctx` authors annotate with."""
        return ctx
