"""The run context `ctx`: every call a workflow makes goes through here, as a numbered step.

The workflow function runs from the top on every advance. A call whose step is recorded returns
the recorded result (or raises the recorded error) without touching the vendor; the first call
without a record does its work, writes its checkpoint and ledger record in one transaction, and
goes on. A wait that is not satisfied raises `Suspend`, which ends the advance; a later advance
replays to the same point and finds the wait satisfied.
"""
from __future__ import annotations

import logging
import random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from types import FrameType
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import IntegrityError, transaction
from pydantic import BaseModel, ValidationError

from connectors.drivers import CallContext
from connectors.errors import (
    DriverError,
    ErrorCode,
    InvalidInput,
    SanomaError,
    describe_issues,
    error_code,
    error_from_dict,
    error_to_dict,
    issues_of,
)
from connectors.operations import Operation
from runs import ledger
from runs.approvals.permissions import grant_approver
from runs.approvals.rules import may_decide, rejection_error, self_approval_allowed, self_approval_details
from runs.config import outline
from runs.config.resolution import ResolvedConfig
from runs.config.workflows import Approved, WorkflowDefinition
from runs.engine import (
    calling,
    children,
    clock,
    fastpath,
    faults,
    heartbeat,
    pauses,
    reconnect,
    secrets,
    transitions,
)
from runs.engine.faults import FaultPoint
from runs.engine.requests import (
    NO_OPTIONS,
    CallOptions,
    as_model,
    check_approval_request,
    check_call_options,
    check_result_model,
    check_sleep,
    check_tags,
    check_wait_message,
    check_wait_run,
    parse_op_input,
)
from runs.engine.transitions import LeaseCheck
from runs.models import (
    ENDED_STATUSES,
    Approval,
    ApprovalRequester,
    ApprovalStatus,
    Decision,
    DecisionMessage,
    LedgerKind,
    LedgerRecord,
    MessageOutcome,
    Run,
    RunMessage,
    RunStatus,
    RunTag,
    Step,
    StepKind,
)
from runs.policies.calls import build_policy_call
from runs.policies.decisions import DecisionKind
from runs.validation import validate_input

log = logging.getLogger("sanoma.engine")

LEDGER_RETRY_DELAYS = (0.05, 0.2, 0.8)
# Records whose step's unique (run, seq) already guards them: written without a savepoint.
FAST_KINDS = (LedgerKind.OP_CALLED, LedgerKind.SLEEP_STARTED)
# Workers' clocks may differ a little: a reconcile waits this much past an in-doubt attempt's
# recorded deadline (taken on the clock of the worker that sent it) before asking the vendor.
CLOCK_MARGIN_MS = 1000
# The test-only fault point right before each kind of write (see `runs.engine.faults`).
_WRITE_POINTS = {
    LedgerKind.OP_INTENT: FaultPoint.BEFORE_INTENT,
    LedgerKind.OP_RESOLVED: FaultPoint.BEFORE_RESOLVED,
    LedgerKind.MESSAGE_RECEIVED: FaultPoint.BEFORE_MESSAGE_READ,
    LedgerKind.APPROVAL_REQUESTED: FaultPoint.BEFORE_APPROVAL,
    LedgerKind.CHILD_STARTED: FaultPoint.BEFORE_CHILD,
    LedgerKind.OP_CALLED: FaultPoint.BEFORE_CALL,
}


class Suspend(BaseException):
    """The run waits: the advance ends and no process holds the run.

    A BaseException so that a workflow's `except Exception` cannot swallow it.
    """

    def __init__(self, waiting_for: str, *, wake_at: datetime | None = None, requeue: bool = False) -> None:
        super().__init__(waiting_for)
        self.waiting_for = waiting_for
        self.wake_at = wake_at
        self.requeue = requeue


class LeaseLost(BaseException):
    """Another worker took the run over: this advance stops without recording anything more."""


class Cancelled(BaseException):
    """The run was cancelled while this advance ran."""


class ReachedStep(BaseException):
    """A replay that stops at a step (`replay_until`) reached it: everything before it replayed."""

    def __init__(self, seq: int) -> None:
        super().__init__(seq)
        self.seq = seq


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
        if options:
            # A keyword the engine does not know would otherwise be dropped without a word.
            names = ", ".join(sorted(options))
            raise InvalidInput(
                f"ctx.{self._op.id} got an unknown keyword argument: {names}; pass the input as one object "
                "(the call takes only timeout= and retry= besides)",
                data={"op": self._op.id, "issues": [
                    {"path": [name], "message": "unknown keyword argument", "code": "unknown_keyword"}
                    for name in sorted(options)]},
            )
        self._ctx._check_in_outline(self._op.id, sys._getframe(1))
        return self._ctx._call(self._op, payload, check_call_options(self._op, timeout, retry))


class RunContext:
    """What a workflow's `run(ctx, input)` is given."""

    def __init__(
        self,
        *,
        run: Run,
        definition: WorkflowDefinition,
        config: ResolvedConfig,
        worker_id: str,
        steps: dict[int, Step],
        approvals: list[Approval],
        messages: list[DecisionMessage],
        segment_seconds: float,
        replay_until: int | None = None,
        attempts: Sequence[LedgerRecord] = (),
    ) -> None:
        self._run = run
        # A dry replay (checking a fork) stops as the body reaches this step: nothing is written.
        self._replay_until = replay_until
        self._definition = definition
        self._config = config
        self._worker_id = worker_id
        self._steps = steps
        self._approvals = {a.seq: a for a in approvals}
        self._messages: dict[int, list[DecisionMessage]] = {}
        for message in messages:
            self._messages.setdefault(message.approval_id, []).append(message)
        self._next_seq = 1
        self._group: dict[str, Any] | None = None
        self._in_all = False
        self._ended = False
        self._poisoned: str | None = None
        self._signal_gen = run.signal_gen
        self._segment_ends = time.monotonic() + segment_seconds
        self._lease = timedelta(seconds=settings.SANOMA_LEASE_SECONDS)
        # The claim just set the lease; step writes only check it until a third of it has passed.
        self._renew_after = time.monotonic() + self._lease.total_seconds() / 3
        self._uses = set(definition.ops)
        # Earlier failed attempts of calls not yet recorded (seq -> attempts made, next try at, epoch ms),
        # and calls in doubt (seq -> the attempt that may have taken effect, and how it was settled).
        self._attempts: dict[int, tuple[int, int | None]] = {}
        self._doubts: dict[int, tuple[int, dict[str, Any] | None]] = {}
        # When each call in doubt was sent (epoch ms) and the deadline its intent recorded (None in
        # a record written before intents carried one).
        self._sent: dict[int, tuple[int, int | None]] = {}
        for record in sorted(attempts, key=lambda r: (r.seq, r.body.get("attempt", 0), r.kind != LedgerKind.OP_INTENT)):
            made = record.body.get("attempt", 0)
            if record.kind == LedgerKind.OP_ATTEMPT_FAILED:
                self._attempts[record.seq] = (made, record.body.get("next_at"))
            elif record.kind == LedgerKind.OP_INTENT:
                self._doubts[record.seq] = (made, None)
                self._sent[record.seq] = (record.at, record.body.get("deadline"))
            elif record.kind == LedgerKind.OP_RESOLVED and self._doubts.get(record.seq, (None,))[0] == made:
                self._doubts[record.seq] = (made, {k: record.body.get(k) for k in ("happened", "output", "by")})

    # ---- public surface -------------------------------------------------------------------

    @property
    def run_id(self) -> str:
        return self._run.id

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._resolve((name,))

    def now(self) -> datetime:
        """The current time, recorded: a replay sees the same value."""
        self._check_in_outline("now", sys._getframe(1))
        self._check_open()
        seq = self._take_seq()
        step = self._replayed(seq, StepKind.NOW, "now")
        if step is not None:
            assert step.output is not None  # a recorded `now` always has its moment
            return clock.from_ms(step.output["at"])
        self._check_segment()
        at = clock.now_ms()
        self._commit(Step(run=self._run, seq=seq, kind=StepKind.NOW, name="now", output={"at": at},
                          next_seq=self._next_seq))
        return clock.from_ms(at)

    def tag(self, **keys: Any) -> None:
        """Tag the run with business keys to find it by (`ctx.tag(order="1001", customer="ada@...")`):
        recorded (`run.tagged`), searchable in the run list. Tagging a key again replaces its value."""
        self._check_in_outline("tag", sys._getframe(1))
        self._check_open()
        tags = check_tags(keys)
        seq = self._take_seq()
        if self._replayed(seq, StepKind.TAG, "tag") is not None:
            return
        self._check_segment()
        step = Step(run=self._run, seq=seq, kind=StepKind.TAG, name="tag", output={"tags": tags},
                    next_seq=self._next_seq)
        self._commit(step, [self._record(LedgerKind.RUN_TAGGED, seq, {"tags": tags})], tags=tags)

    def sleep(self, until: Any = None, **duration: Any) -> None:
        """Wait until a moment (`until`: ISO 8601 with an offset, epoch ms, or an aware datetime)
        or for a duration (`ms`, `seconds`, `minutes`, `hours`, `days`, summed)."""
        self._check_in_outline("sleep", sys._getframe(1))
        self._require("sleep")
        self._check_open()
        until_ms, total_ms = check_sleep(until, duration)
        seq = self._take_seq()
        step = self._replayed(seq, StepKind.SLEEP, "sleep")
        if step is None:
            self._check_segment()
            started = clock.now_ms()
            until_ms = until_ms if until_ms is not None else started + int(total_ms)
            record = self._record(LedgerKind.SLEEP_STARTED, seq, {"until": until_ms})
            step = Step(run=self._run, seq=seq, kind=StepKind.SLEEP, name="sleep", output={"until": until_ms},
                        next_seq=self._next_seq)
            self._commit(step, [record])
        assert step.output is not None  # a recorded sleep always has its end
        until_ms = step.output["until"]
        if clock.now_ms() < until_ms:
            raise Suspend("sleep", wake_at=clock.from_ms(until_ms))

    def wait_message(self, topic: str, timeout: Any = None, *, model: Any = None) -> Any:
        """Wait for the next message sent to this run on `topic` and return its payload (a JSON
        object), or with `model` (a pydantic model class) the payload parsed by it. Messages are
        read in the order they arrived; one sent before the wait is kept for it. With `timeout`
        (seconds, or a timedelta) the wait raises `wait_timed_out` once that deadline passes
        without a message. No process is held while it waits.

        Two steps: the wait's start (its topic and deadline, so a replay keeps the same deadline)
        and the message it read (its payload, so a replay returns the same one)."""
        self._check_in_outline("wait_message", sys._getframe(1))
        self._require("wait_message")
        self._check_open()
        topic, timeout_ms = check_wait_message(topic, timeout)
        check_result_model(f"ctx.wait_message({topic!r})", model)
        step = self._wait_steps(StepKind.WAIT, StepKind.MESSAGE, topic, timeout_ms, {"topic": topic},
                                read=lambda seq, until: self._read_message(topic, seq, until))
        assert step.output is not None  # a message read always has its payload
        payload: dict[str, Any] = step.output["payload"]
        return as_model(f"the message on {topic!r}", payload, model)

    def start_run(self, workflow: str | WorkflowDefinition, input: Any = None, run_id: str | None = None) -> str:
        """Start a run of `workflow` (its name, or its definition) as a child of this one and return
        its id (`<this run>.<seq>` unless `run_id` is given); the input is a dict or a model. The
        child runs as this run's starter and records this run as its parent. Starting it is a call
        the policy sees (`sanoma.run.start`, target the child's id, input its workflow and input),
        recorded as `run.child_started`; the child's row is written in the same transaction, so a
        replay returns the same child and never starts a second one."""
        self._check_in_outline("start_run", sys._getframe(1))
        self._require("start_run")
        self._check_open()
        if isinstance(workflow, WorkflowDefinition):
            workflow = workflow.name
        definition = self._config.workflows.get(workflow) if isinstance(workflow, str) else None
        if definition is None:
            raise InvalidInput(
                f"ctx.start_run: no workflow {workflow!r}; "
                f"the workflows are {', '.join(sorted(self._config.workflows))}",
                data={"issues": [{"path": ["workflow"], "message": "no such workflow", "code": "not_found"}]})
        input = {} if input is None else input
        if isinstance(input, BaseModel):
            input = input.model_dump(mode="json")
        validate_input(definition.input, input, name=definition.name)
        seq = self._take_seq()
        step = self._replayed(seq, StepKind.CALL, children.START_RUN.id)
        if step is not None:
            self._next_seq = step.next_seq
            if step.error is not None:
                raise error_from_dict(step.error)
            assert step.output is not None  # a child started always has its id
            started: str = step.output["run_id"]
            return started
        self._check_segment()
        child_id = children.child_run_id(self._run.id, seq, run_id)
        op = children.START_RUN
        input_json = {"workflow": definition.name, "input": input, "run_id": child_id}
        decision, approval = self._decide(op, seq, input_json, child_id)
        error: SanomaError | None = None
        if approval is not None:
            error = rejection_error(approval)
        elif decision["kind"] == DecisionKind.DENY:
            reason = decision.get("reason") or "denied"
            error = SanomaError(f"{op.id} was denied by policy: {reason}", code=ErrorCode.POLICY_DENIED,
                                data={"op": op.id, "reason": reason, "workflow": definition.name},
                                name="PolicyDeniedError")
        elif Run.objects.filter(pk=child_id).exists():
            error = SanomaError(f"Run {child_id} already exists; start the child with another run_id",
                                code=ErrorCode.RUN_EXISTS, data={"run_id": child_id})
        else:
            try:
                children.check_depth(self._run)
            except SanomaError as err:
                error = err
        body: dict[str, Any] = {"op": op.id, "effect": op.effect, "child": child_id, "workflow": definition.name,
                                "input": input, "decision": decision}
        if approval is not None:
            body["approval"] = approval.approval_id
        if error is not None:
            body["error"] = error_to_dict(error)
            failed = Step(run=self._run, seq=seq, kind=StepKind.CALL, name=op.id, error=body["error"],
                          decision=decision, next_seq=self._next_seq)
            self._commit(failed, [self._record(LedgerKind.CHILD_STARTED, seq, body)])
            raise error
        now = clock.now()
        child = Run(id=child_id, workflow=definition.name, app_version=self._run.app_version, input=input,
                    started_by=self._run.started_by, groups=list(self._run.groups or ()), parent_id=self._run.id,
                    status=RunStatus.QUEUED, created_at=now, updated_at=now, queued_at=now)
        step = Step(run=self._run, seq=seq, kind=StepKind.CALL, name=op.id, output={"run_id": child_id},
                    decision=decision, next_seq=self._next_seq)
        self._commit(step, [self._record(LedgerKind.CHILD_STARTED, seq, body)], child=child)
        return child_id

    def wait_run(self, run_id: str, timeout: Any = None, *, model: Any = None) -> Any:
        """Wait for a child run (an id `ctx.start_run` returned) to end and return its output, or
        with `model` (a pydantic model class) the output parsed by it. A child that failed raises a
        copy of its error, keeping its code (its data names the child); a cancelled one raises
        `run_cancelled`. With `timeout` (seconds, or a timedelta) the wait raises `wait_timed_out`
        once that deadline passes. No process is held meanwhile: the child's end wakes this run."""
        self._check_in_outline("wait_run", sys._getframe(1))
        self._require("wait_run")
        self._check_open()
        run_id, timeout_ms = check_wait_run(run_id, timeout)
        check_result_model(f"ctx.wait_run({run_id!r})", model)

        def check_child() -> None:
            if not Run.objects.filter(pk=run_id, parent_id=self._run.pk).exists():
                raise InvalidInput(f"ctx.wait_run({run_id!r}): that is not a run this run started; "
                                   "wait for an id ctx.start_run returned",
                                   data={"issues": [{"path": ["run_id"], "message": "not a child of this run",
                                                     "code": "not_child"}]})

        step = self._wait_steps(StepKind.RUN_WAIT, StepKind.RUN_END, run_id, timeout_ms, {"run": run_id},
                                read=lambda seq, until: self._read_child_end(run_id, seq, until), first=check_child)
        assert step.output is not None  # a child's end read always has its output
        return as_model(f"the output of child run {run_id}", step.output["output"], model)

    def all(self, members: Any) -> list[Any]:
        """Run zero-argument functions one after another; their records carry the group."""
        self._check_in_outline("all", sys._getframe(1))
        self._require("all")
        if self._in_all:
            raise InvalidInput("ctx.all cannot be nested: call it from run, not from a member")
        if not isinstance(members, (list, tuple)) or not all(callable(m) for m in members):
            raise InvalidInput(
                "ctx.all takes a list of functions without arguments, e.g. ctx.all([lambda: ..., lambda: ...])")
        if not members:
            return []
        group_id = f"all:{self._next_seq}"
        results = []
        self._in_all = True
        try:
            for index, member in enumerate(members):
                self._group = {"id": group_id, "index": index, "size": len(members)}
                results.append(member())
        finally:
            self._in_all = False
            self._group = None
        return results

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
        self._check_in_outline("approval", sys._getframe(1))
        self._require("approval")
        self._check_open()
        approver_id, cover_ids, link_list = check_approval_request(title, approver, covers, links, details)
        seq = self._take_seq()
        approval = self._approvals.get(seq)
        if approval is None:
            self._check_segment()
            approval = self._request_approval(
                seq=seq, title=title, approver=approver_id, requested_by=ApprovalRequester.WORKFLOW, covers=cover_ids,
                links=link_list, details=details,
            )
        return self._await_approval(approval)

    # ---- operation calls ------------------------------------------------------------------

    def _resolve(self, path: tuple[str, ...]) -> Any:
        op_id = ".".join(path)
        if op_id in self._uses and op_id in self._config.ops:
            return _OperationCall(self, self._config.ops[op_id])
        # An app's collection has one more part than a vendor's operation: `ctx.data.<app>.<name>.<op>`.
        depth = 4 if path[0] == "data" else 3
        if len(path) >= depth or (len(path) == 3 and not any(u.startswith(op_id + ".") for u in self._uses)):
            raise self._not_available(path)
        return _Namespace(self, path)

    def _not_available(self, path: tuple[str, ...]) -> SanomaError:
        return SanomaError(
            f"ctx.{'.'.join(path)} is not available: add it to `uses` in workflow \"{self._definition.name}\"",
            code=ErrorCode.INVALID_INPUT,
        )

    def _check_in_outline(self, call: str, frame: FrameType) -> None:
        """A ctx call from code the workflow's outline does not show (a helper in another file, a
        function that got hold of ctx) fails before anything is decided or called."""
        why = outline.check_call(self._definition, frame, call)
        if why is not None:
            raise SanomaError(why, code=ErrorCode.CALL_NOT_IN_OUTLINE, data={"call": call})

    def _require(self, builtin: str) -> None:
        if builtin not in self._definition.builtins:
            raise self._not_available((builtin,))

    def _call(self, op: Operation, payload: Any, options: CallOptions = NO_OPTIONS) -> Any:
        self._check_open()
        parsed = parse_op_input(op, payload)
        seq = self._take_seq()
        step = self._replayed(seq, StepKind.CALL, op.id)
        if step is not None:
            self._next_seq = step.next_seq
            if step.error is not None:
                raise error_from_dict(step.error)
            return op.output.model_validate(step.output)
        self._check_segment()
        held = pauses.holding_call(op)
        if held is not None:  # the run waits for the unpause instead of failing
            raise Suspend(pauses.waiting_for(held))
        input_json = parsed.model_dump(mode="json")
        target = None
        if op.target is not None:
            target = op.target(parsed)
            if not isinstance(target, str):
                raise SanomaError(f"The target of {op.id} must be a string; it gave {type(target).__name__}",
                                  code=ErrorCode.CONFIG_INVALID, data={"op": op.id})
        decision, approval = self._decide(op, seq, input_json, target)
        if approval is not None:
            error = rejection_error(approval)
            self._settle_call(op, seq, input_json, decision, error=error, approval=approval)
            raise error
        if decision["kind"] == DecisionKind.DENY:
            reason = decision.get("reason") or "denied"
            error = SanomaError(
                reason if reason.startswith(op.id) else f"{op.id} was denied by policy: {reason}",
                code=ErrorCode.POLICY_DENIED,
                data={"op": op.id, "reason": reason},
                name="PolicyDeniedError",
            )
            self._settle_call(op, seq, input_json, decision, error=error)
            raise error
        return self._call_driver(op, seq, parsed, input_json, decision, options)

    def _call_driver(self, op: Operation, seq: int, parsed: BaseModel, input_json: dict, decision: dict,
                     options: CallOptions) -> Any:
        """Attempt the call until it succeeds, fails for good, or waits durably for its next try.

        Each failed attempt is recorded (`op.attempt_failed`: the error and when the next try is);
        an idempotent operation is tried again while its retry policy allows and the error is
        retryable. A wait up to a few seconds is slept here; a longer one suspends the run until
        the next try's time, and the attempt count survives in those records."""
        driver = self._config.drivers.get(op.id)
        policy = calling.retry_policy(op, options.retry)
        tries = policy.attempts if op.idempotent else 1
        timeout = options.timeout or op.timeout or calling.default_timeout()
        attempt, next_at = self._attempts.get(seq, (0, None))
        if next_at is not None and clock.now_ms() < next_at:
            raise Suspend("retry", wake_at=clock.from_ms(next_at))
        in_doubt = op.idempotency_key == "ignored" and not op.idempotent
        if in_doubt and seq in self._doubts:
            settled = self._settle_doubt(op, seq, parsed, input_json, decision, driver, timeout)
            if settled is not None:
                return settled
            attempt = max(attempt, self._doubts[seq][0])  # it did not happen: call again
        started = time.monotonic()
        while True:
            attempt += 1
            allowed = timeout
            if in_doubt:
                # Recorded before the call: a worker that dies before recording the reply leaves
                # this behind, and the run is then in doubt instead of calling again. The intent
                # records the attempt's deadline: past it the attempt is abandoned, and a reconcile
                # read of a worker taking the run over waits for it (see `_settle_doubt`).
                deadline_ms = clock.now_ms() + int(timeout * 1000)
                self._commit(None, [self._record(LedgerKind.OP_INTENT, seq,
                                                 {"op": op.id, "attempt": attempt, "deadline": deadline_ms},
                                                 key=f"{seq}:{attempt}")], retries=True)
                allowed = (deadline_ms - clock.now_ms()) / 1000  # less what writing the intent took
                if allowed <= 0:
                    # Writing the intent outlasted the call's time (a database blip ridden out): the
                    # call is not sent; the next advance settles this attempt as one in doubt.
                    raise Suspend("segment", requeue=True)
            context = CallContext(
                idempotency_key=f"{self._run.id}:{seq}", run_id=self._run.id, op_id=op.id, attempt=attempt,
                by=self._run.started_by, secrets=secrets.for_connector(op.vendor), timeout=allowed,
                deadline=time.time() + allowed,
            )
            try:
                if driver is None:
                    raise SanomaError(f"{op.id} has no driver", code=ErrorCode.NO_DRIVER, data={"op": op.id})
                with self._heartbeat():
                    reply = calling.invoke(driver, op, parsed, context, allowed)
                try:
                    output = op.output.model_validate(reply)
                except ValidationError as err:
                    raise DriverError(
                        f"The reply of {op.id} does not match its output schema: {describe_issues(issues_of(err))}",
                        retryable=False,
                    ) from None
            except Exception as err:
                if op.idempotent and attempt < tries and getattr(err, "retryable", None) is True:
                    wait = policy.delay(attempt, retry_after=getattr(err, "retry_after", None),
                                        spread=random.random())
                    self._attempt_failed(op, seq, attempt, err, wait)
                    if wait > calling.DURABLE_RETRY_SECONDS:
                        raise Suspend("retry", wake_at=clock.from_ms(self._attempts[seq][1] or 0)) from None
                    clock.sleep(wait)
                    continue
                duration = int((time.monotonic() - started) * 1000)
                self._settle_call(op, seq, input_json, decision, error=err, attempt=attempt, duration_ms=duration)
                raise
            faults.point(FaultPoint.AFTER_DRIVER_CALL)
            duration = int((time.monotonic() - started) * 1000)
            self._settle_call(op, seq, input_json, decision, output=output, attempt=attempt, duration_ms=duration)
            return output

    def _settle_doubt(self, op: Operation, seq: int, parsed: BaseModel, input_json: dict, decision: dict,
                      driver: Any, timeout: float) -> BaseModel | None:
        """A call whose effect may have happened: its outcome as an operator or the reconcile read
        settled it (None: it did not happen, call again); unsettled, the run waits `in_doubt`.

        The reconcile read is asked only once the attempt in doubt can no longer land: its worker
        may be frozen (past its lease, which fences its database writes but not its vendor call)
        with the call still in flight, and a read before the call's deadline could say "did not
        happen" just before it does. Until then the run waits `in_doubt`, woken at the deadline."""
        attempt, resolution = self._doubts[seq]
        if resolution is None and op.reconcile is not None:
            lands_until = self._lands_until(seq, timeout)
            if clock.now_ms() < lands_until:
                raise Suspend("in_doubt", wake_at=clock.from_ms(lands_until))
            resolution = self._reconcile(op, seq, attempt, parsed, driver, timeout)
        if resolution is None:
            raise Suspend("in_doubt")
        if not resolution["happened"]:
            return None
        output = op.output.model_validate(resolution["output"])
        self._settle_call(op, seq, input_json, decision, output=output, attempt=attempt,
                          extra={"resolved_by": resolution["by"]})
        return output

    def _lands_until(self, seq: int, timeout: float) -> int:
        """Until when (epoch ms) the attempt in doubt at `seq` may still land at the vendor: the
        deadline its intent recorded (an older intent: its time plus the call's timeout), plus a
        margin for the clocks of two workers."""
        sent_at, deadline = self._sent[seq]
        if deadline is None:
            deadline = sent_at + int(timeout * 1000)
        return deadline + CLOCK_MARGIN_MS

    def _reconcile(self, op: Operation, seq: int, attempt: int, parsed: BaseModel, driver: Any,
                   timeout: float) -> dict[str, Any] | None:
        """Ask the vendor whether the in-doubt call took effect (the connector's reconcile read);
        its answer is recorded (`op.resolved` by `reconcile`). None when it cannot say."""
        read = self._config.ops.get(op.reconcile or "")
        reader = self._config.drivers.get(read.id) if read is not None else None
        if read is None or reader is None:
            return None
        context = CallContext(idempotency_key=f"{self._run.id}:{seq}", run_id=self._run.id, op_id=read.id,
                              attempt=attempt, by=self._run.started_by, secrets=secrets.for_connector(read.vendor),
                              timeout=timeout, deadline=time.time() + timeout)
        try:
            with self._heartbeat():
                answer = read.output.model_validate(calling.invoke(reader, read, parsed, context, timeout))
            said = answer.model_dump(mode="json")
            happened = bool(said["happened"])
            output = op.output.model_validate(said["output"]).model_dump(mode="json") if happened else None
        except Exception as err:
            log.warning("run %s: reconciling %s failed (%s); it waits for an operator", self._run.id, op.id, err,
                        extra={"run_id": self._run.id})
            return None
        resolution = {"happened": happened, "output": output, "by": "reconcile"}
        body = {"op": op.id, "attempt": attempt, **resolution}
        self._commit(None, [self._record(LedgerKind.OP_RESOLVED, seq, body, key=f"{seq}:{attempt}")])
        self._doubts[seq] = (attempt, resolution)
        return resolution

    def _attempt_failed(self, op: Operation, seq: int, attempt: int, err: BaseException, wait: float) -> None:
        """Record a failed attempt and when the next one is (with the run's flag that it has such records)."""
        next_at = clock.now_ms() + int(wait * 1000)
        body = {"op": op.id, "attempt": attempt, "error": error_to_dict(err), "next_at": next_at,
                "wait_ms": int(wait * 1000)}
        record = self._record(LedgerKind.OP_ATTEMPT_FAILED, seq, body, key=f"{seq}:{attempt}")
        self._commit(None, [record], retries=True)
        self._attempts[seq] = (attempt, next_at)

    def _settle_call(
        self,
        op: Operation,
        seq: int,
        input_json: dict,
        decision: dict,
        *,
        output: BaseModel | None = None,
        error: BaseException | None = None,
        attempt: int | None = None,
        duration_ms: int = 0,
        approval: Approval | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Write the call's checkpoint and its `op.called` record together."""
        body: dict[str, Any] = {
            "op": op.id,
            "effect": op.effect,
            "input": ledger.mask_opaque(input_json, op.opaque),
            "decision": decision,
            "duration_ms": duration_ms,
        }
        output_json = output.model_dump(mode="json") if output is not None else None
        error_json = error_to_dict(error) if error is not None else None
        if output_json is not None:
            body["output"] = ledger.mask_opaque(output_json, op.opaque)
        if error_json is not None:
            body["error"] = error_json
        if attempt is not None:
            body["attempt"] = attempt
        if approval is not None:
            body["approval"] = approval.approval_id
        body.update(extra or {})
        step = Step(run=self._run, seq=seq, kind=StepKind.CALL, name=op.id, output=output_json, error=error_json,
                    decision=decision, attempt=attempt or 1, next_seq=self._next_seq)
        record = self._record(LedgerKind.OP_CALLED, seq, body)
        if output is None:
            self._commit(step, [record])
            return
        # The vendor acted: retry the write before giving up, then refuse every further call, so a
        # workflow that catches the failure cannot repeat the effect unrecorded.
        self._commit_effect(op, step, record, call_seconds=duration_ms / 1000)

    # ---- policy and approvals -------------------------------------------------------------

    def _decide(self, op: Operation, seq: int, input_json: dict, target: str | None) -> tuple[dict, Approval | None]:
        """Ask the policy; a hold creates (or finds) an approval and waits for it in turn."""
        held = sorted((a for a in self._approvals.values() if a.op_seq == seq), key=lambda a: a.seq)
        for index in range(len(held) + 1):
            decision = self._policy_decision(op, input_json, target)
            if decision["kind"] != DecisionKind.APPROVE:
                return decision, None
            if any(a.status == ApprovalStatus.APPROVED and a.approver == decision["approver"] for a in held[:index]):
                return decision, None  # that approver already let this very call through
            if index == len(held):
                approver = decision["approver"]
                shown = f"group {approver[6:]}" if approver.startswith("group:") else approver
                approval = self._request_approval(
                    seq=self._take_seq(), title=decision.get("title") or f"{op.id} needs {shown}",
                    approver=approver, requested_by=ApprovalRequester.POLICY,
                    covers=list(dict.fromkeys([op.cover(target), *decision.get("covers", [])])),
                    op=op.id, op_input=input_json, op_seq=seq,
                    details=self_approval_details(None, decision.get("self_approval") is True),
                )
                raise Suspend("approval")
            approval = held[index]
            self._next_seq = max(self._next_seq, approval.seq + 1)
            self._settle_approval(approval)
            if approval.status == ApprovalStatus.PENDING:
                raise Suspend("approval")
            if approval.status != ApprovalStatus.APPROVED:
                return decision, approval
        raise SanomaError(f"The policy kept holding {op.id} after {len(held)} approvals; check its @approve rules",
                          code=ErrorCode.POLICY_FAILED, data={"op": op.id})

    def _policy_decision(self, op: Operation, input_json: dict, target: str | None) -> dict:
        call = build_policy_call(
            op=op, input_json=input_json, target=target, actor=self._run.started_by, groups=self._run.groups or (),
            run_id=self._run.id, workflow=self._run.workflow, approvals=self._approvals.values(),
        )
        try:
            decision = self._config.policy.decide(call)
        except SanomaError:
            raise
        except Exception as err:
            raise SanomaError(f"The policy failed deciding {op.id}: {err}",
                              code=error_code(err) or ErrorCode.POLICY_FAILED, data={"op": op.id}) from err
        return decision.to_dict()

    def _request_approval(
        self, *, seq: int, title: str, approver: str, requested_by: str, covers: list[str],
        links: Sequence[str] = (), details: Any = None, op: str = "", op_input: Any = None, op_seq: int | None = None,
    ) -> Approval:
        number = len(self._approvals) + 1
        approval = Approval(
            run=self._run, approval_id=f"approval-{number}", seq=seq, title=title, approver=approver,
            requested_by=requested_by, covers=list(covers), links=list(links), details=details, op=op,
            op_input=op_input, op_seq=op_seq, requested_at=clock.now(),
        )
        body = {"approval": approval.approval_id, "title": title, "approver": approver, "requested_by": requested_by,
                "covers": list(covers)}
        if op:
            body["op"] = op
        record = self._record(LedgerKind.APPROVAL_REQUESTED, seq, body, key=approval.approval_id)
        self._commit(None, [record], approval=approval)
        self._approvals[seq] = approval
        return approval

    def _await_approval(self, approval: Approval) -> Approved:
        self._next_seq = max(self._next_seq, approval.seq + 1)
        self._settle_approval(approval)
        if approval.status == ApprovalStatus.PENDING:
            raise Suspend("approval")
        if approval.status == ApprovalStatus.APPROVED:
            return Approved(approved_by=approval.decided_by, at=approval.decided_at, note=approval.note,
                            approval_id=approval.approval_id)
        raise rejection_error(approval)

    def _settle_approval(self, approval: Approval) -> None:
        """Apply the decision messages sent to a pending approval, in arrival order."""
        for message in self._messages.pop(approval.id, []):
            if message.applied:
                continue
            if approval.status != ApprovalStatus.PENDING:
                self._apply_message(approval, message, outcome=MessageOutcome.IGNORED)
                continue
            why: str | None
            if message.decision not in Decision.values:
                why = f"{message.decision!r} is not a decision: send approve or reject"
            else:
                why = may_decide(approval.approver, message.by, message.groups, starter=self._run.started_by,
                                 self_approval=self_approval_allowed(approval))
            if why is not None:
                approval.refused = [*approval.refused, {"by": message.by, "id": message.message_id,
                                                        "at": clock.now_ms(), "reason": why}]
                key = f"{approval.approval_id}:refused:{len(approval.refused)}"
                record = self._record(LedgerKind.APPROVAL_REFUSED, approval.seq,
                                      {"approval": approval.approval_id, "by": message.by, "reason": why}, key=key,
                                      actor=message.by)
                self._apply_message(approval, message, outcome=MessageOutcome.REFUSED, records=[record])
                continue
            approved = message.decision == Decision.APPROVE
            approval.status = ApprovalStatus.APPROVED if approved else ApprovalStatus.REJECTED
            approval.decided_by = message.by
            approval.decided_at = clock.now()
            approval.note = message.note
            approval.decided_with = message.message_id
            body = {"approval": approval.approval_id, "decision": message.decision, "by": message.by}
            if message.note:
                body["note"] = message.note
            record = self._record(LedgerKind.APPROVAL_DECIDED, approval.seq, body, key=approval.approval_id,
                                  actor=message.by)
            self._apply_message(approval, message, outcome=MessageOutcome.DECIDED, records=[record])

    def _apply_message(self, approval: Approval, message: DecisionMessage, *, outcome: MessageOutcome,
                       records: Sequence[LedgerRecord] = ()) -> None:
        message.applied = True

        def write() -> bool:
            message.outcome = outcome
            with self._guarded():
                written = records
                if outcome == MessageOutcome.DECIDED:
                    changed = Approval.objects.filter(pk=approval.pk, status=ApprovalStatus.PENDING).update(
                        status=approval.status, decided_by=approval.decided_by, decided_at=approval.decided_at,
                        note=approval.note, decided_with=approval.decided_with,
                    )
                    if not changed:  # withdrawn meanwhile: the withdrawal stands
                        approval.refresh_from_db(fields=["status", "decided_by", "decided_at", "note", "decided_with"])
                        message.outcome = MessageOutcome.IGNORED
                        written = ()
                elif outcome == MessageOutcome.REFUSED:
                    Approval.objects.filter(pk=approval.pk).update(refused=approval.refused)
                DecisionMessage.objects.filter(pk=message.pk).update(applied=True, outcome=message.outcome)
                for record in written:
                    reconnect.unsaved(record)  # a try rolled back with the connection may have saved it
                    ledger.append(record)
            return True

        def landed() -> bool | None:
            applied = DecisionMessage.objects.filter(pk=message.pk, applied=True).values_list("outcome", flat=True)
            for seen in applied:
                with self._guarded():
                    pass
                message.outcome = seen
                if seen == MessageOutcome.IGNORED:
                    approval.refresh_from_db(fields=["status", "decided_by", "decided_at", "note", "decided_with"])
                return True
            return None

        faults.point(FaultPoint.BEFORE_DECISION)
        reconnect.ride_out(write, deadline=self._write_deadline, landed=landed,
                           what=f"run {self._run.id}: applying decision message {message.message_id}")

    # ---- messages -------------------------------------------------------------------------

    def _read_message(self, topic: str, seq: int, until: int | None) -> Step:
        """Read the oldest unread message on `topic` (its step, its `message.received` record and
        its read mark in one transaction); time out past the deadline; else suspend."""
        message = (RunMessage.objects.filter(run_id=self._run.pk, topic=topic, read_seq__isnull=True)
                   .order_by("id").first())
        if message is not None:
            self._check_segment()
            body = {"topic": topic, "payload": message.payload, "by": message.sent_by,
                    "message": message.message_id}
            record = self._record(LedgerKind.MESSAGE_RECEIVED, seq, body, actor=message.sent_by)
            step = Step(run=self._run, seq=seq, kind=StepKind.MESSAGE, name=topic,
                        output={"payload": message.payload, "message": message.message_id, "by": message.sent_by},
                        next_seq=self._next_seq)
            self._commit(step, [record], read=message)
            return step
        if until is not None and clock.now_ms() >= until:
            return self._timed_out(StepKind.MESSAGE, topic, seq, f"No message on {topic!r} came",
                                   {"topic": topic, "until": until})
        raise Suspend("message", wake_at=None if until is None else clock.from_ms(until))

    # ---- waits ------------------------------------------------------------------------------

    def _wait_steps(self, kind: StepKind, end_kind: StepKind, name: str, timeout_ms: int | None,
                    began_with: dict[str, Any], *, read: Callable[[int, int | None], Step],
                    first: Callable[[], None] | None = None) -> Step:
        """A wait is two steps: its start (what it waits for and its deadline, fixed when the run
        first reaches it, so a replay keeps the same deadline) and what it read (`read(seq,
        until)`: a step, or it suspends). Raises the read's recorded error; returns its step."""
        wait_seq = self._take_seq()
        began = self._replayed(wait_seq, kind, name)
        if began is None:
            if first is not None:
                first()
            self._check_segment()
            until = None if timeout_ms is None else clock.now_ms() + timeout_ms
            began = Step(run=self._run, seq=wait_seq, kind=kind, name=name, output={**began_with, "until": until},
                         next_seq=self._next_seq)
            self._commit(began, point=FaultPoint.BEFORE_WAIT)
        assert began.output is not None  # a recorded wait always has its deadline
        end_seq = self._take_seq()
        step = self._replayed(end_seq, end_kind, name)
        if step is None:
            step = read(end_seq, began.output.get("until"))
        if step.error is not None:
            raise error_from_dict(step.error)
        return step

    def _timed_out(self, kind: StepKind, name: str, seq: int, what: str, data: dict[str, Any]) -> Step:
        """A wait's deadline passed: its read step records `wait_timed_out`."""
        until = clock.from_ms(data["until"]).isoformat()
        error = SanomaError(f"{what} before the wait's deadline ({until})", code=ErrorCode.WAIT_TIMED_OUT,
                            data=data, name="WaitTimedOutError")
        step = Step(run=self._run, seq=seq, kind=kind, name=name, error=error_to_dict(error), next_seq=self._next_seq)
        self._commit(step)
        return step

    # ---- child runs -----------------------------------------------------------------------

    def _read_child_end(self, run_id: str, seq: int, until: int | None) -> Step:
        """Read how the child ended (its step and its `run.child_ended` record together); time
        out past the deadline; else suspend until its end wakes this run."""
        child = Run.objects.filter(pk=run_id).only("id", "status", "result", "error").first()
        if child is not None and child.status in ENDED_STATUSES:
            self._check_segment()
            body: dict[str, Any] = {"child": run_id, "status": child.status}
            if child.status == RunStatus.FINISHED:
                body["output"] = child.result
                step = Step(run=self._run, seq=seq, kind=StepKind.RUN_END, name=run_id,
                            output={"status": child.status, "output": child.result}, next_seq=self._next_seq)
            else:
                body["error"] = error_to_dict(children.ended_error(child))
                step = Step(run=self._run, seq=seq, kind=StepKind.RUN_END, name=run_id, error=body["error"],
                            next_seq=self._next_seq)
            self._commit(step, [self._record(LedgerKind.CHILD_ENDED, seq, body)])
            return step
        if until is not None and clock.now_ms() >= until:
            return self._timed_out(StepKind.RUN_END, run_id, seq, f"Child run {run_id} had not ended",
                                   {"child": run_id, "until": until})
        raise Suspend("run", wake_at=None if until is None else clock.from_ms(until))

    # ---- durability -----------------------------------------------------------------------

    def _take_seq(self) -> int:
        seq = self._next_seq
        if self._replay_until is not None and seq >= self._replay_until:
            raise ReachedStep(seq)
        self._next_seq += 1
        return seq

    def _replayed(self, seq: int, kind: str, name: str) -> Step | None:
        step = self._steps.get(seq)
        if step is not None and (step.kind != kind or step.name != name):
            raise SanomaError(
                f"Run {self._run.id} no longer replays: step {seq} was {step.kind} {step.name}, now {kind} {name}. "
                "A workflow must make the same calls in the same order on every replay",
                code=ErrorCode.REPLAY_DIVERGED,
                data={"seq": seq, "was": f"{step.kind} {step.name}", "now": f"{kind} {name}"},
            )
        return step

    def _record(self, kind: LedgerKind, seq: int, body: dict[str, Any], *, key: str | None = None,
                actor: str | None = None) -> LedgerRecord:
        return ledger.build(self._run, kind=kind, seq=seq, body=body, key=key, group=self._group,
                            app=self._config.app_name, actor=actor)

    def _check_open(self) -> None:
        if self._ended:
            raise SanomaError(f"Run {self._run.id} has ended: no more calls", code=ErrorCode.RUN_ENDED)
        if self._poisoned:
            raise SanomaError(
                f"Run {self._run.id} takes no more calls: {self._poisoned} succeeded, "
                "but the ledger could not record it",
                code=ErrorCode.RUN_ENDED,
            )

    def _check_segment(self) -> None:
        if time.monotonic() > self._segment_ends:
            raise Suspend("segment", requeue=True)

    @contextmanager
    def _guarded(self) -> Iterator[None]:
        """A transaction that renews the lease and fails if another worker took the run."""
        cancelled = False
        with transaction.atomic():
            now = clock.now()
            if not transitions.renew_lease(run_id=self._run.pk, worker_id=self._worker_id, now=now,
                                           lease_until=now + self._lease):
                # The cancel/lease handshake: see `runs.engine.transitions`.
                if transitions.lease_check(run_id=self._run.pk, worker_id=self._worker_id) is not LeaseCheck.CANCELLED:
                    raise LeaseLost(self._run.id)
                cancelled = True  # what already happened is still recorded; nothing more is done
            yield
        self._lease_renewed()
        if cancelled:
            raise Cancelled(self._run.id)

    @contextmanager
    def _heartbeat(self) -> Iterator[None]:
        """Keep the lease while a slow vendor call runs, so no other worker takes the run over."""
        token = heartbeat.begin(self._run.pk, self._worker_id, self._lease)
        try:
            yield
        finally:
            heartbeat.end(token)

    def _commit(self, step: Step | None, records: Sequence[LedgerRecord] = (), *,
                approval: Approval | None = None, read: RunMessage | None = None, child: Run | None = None,
                tags: dict[str, str] | None = None, retries: bool = False, point: FaultPoint | None = None,
                call_seconds: float = 0.0) -> None:
        """Write a step and its records (and what goes with them) in one transaction, under the lease.

        A dropped connection is ridden out (`runs.engine.reconnect.ride_out`): the write is tried
        again on a new connection until the lease would run out, after looking whether it had
        landed with only its answer lost. Past that, `Unreachable` stops the advance."""
        if faults.any_armed():
            point = point or (_WRITE_POINTS.get(LedgerKind(records[0].kind)) if records else None)
            if point is not None:
                faults.point(point)
        mark_approvals = approval is not None and not self._run.has_approvals
        mark_retries = retries and not self._run.has_retries

        def write() -> bool:
            reconnect.unsaved(*records, step, approval)  # a try rolled back with the connection may have saved them
            self._write(step, records, approval=approval, read=read, child=child, tags=tags,
                        mark_approvals=mark_approvals, mark_retries=mark_retries)
            return True

        def landed() -> bool | None:
            found = Step.objects.filter(run_id=self._run.pk, seq=step.seq).first() if step is not None else None
            if found is None and (step is not None or not records
                                  or not LedgerRecord.objects.filter(record_id=records[0].record_id).exists()):
                return None
            with self._guarded():  # a run another worker took over stops here
                pass
            if found is not None:
                self._steps[found.seq] = found
            return True

        seq = step.seq if step is not None else records[0].seq if records else "-"
        what = f"run {self._run.id}: writing step {seq}"
        reconnect.ride_out(write, deadline=lambda: self._write_deadline(call_seconds), landed=landed, what=what)
        if mark_approvals:
            self._run.has_approvals = True
        if mark_retries:
            self._run.has_retries = True

    def _write_deadline(self, call_seconds: float = 0.0) -> float:
        """When (time.monotonic()) a write riding out a dropped connection gives up: before the lease
        could run out (see `_lease_left`)."""
        return time.monotonic() + self._lease_left(call_seconds)

    def _write(self, step: Step | None, records: Sequence[LedgerRecord], *, approval: Approval | None,
               read: RunMessage | None, child: Run | None, tags: dict[str, str] | None, mark_approvals: bool,
               mark_retries: bool) -> None:
        """One try of `_commit`'s write."""
        one_record = (step is not None and approval is None and read is None and child is None and tags is None
                      and not mark_retries and len(records) == 1
                      and records[0].kind in FAST_KINDS)
        if one_record and step is not None and fastpath.available():
            if self._commit_fast(step, records[0]):
                return
        try:
            with self._guarded():
                faults.point(FaultPoint.STEP_COMMIT)
                if step is not None:
                    step.created_at = clock.now()
                    step.save(force_insert=True)
                if approval is not None:
                    approval.save(force_insert=True)
                    grant_approver(approval)
                    if mark_approvals:
                        transitions.mark_has_approvals(run_id=self._run.pk)
                if read is not None and step is not None:
                    marked = RunMessage.objects.filter(pk=read.pk, read_seq__isnull=True).update(
                        read_seq=step.seq, read_at=clock.now())
                    if not marked:  # only the lease holder reads messages: another worker has the run
                        raise LeaseLost(f"{self._run.id}: message {read.message_id} was read by another advance")
                for key, value in (tags or {}).items():
                    RunTag.objects.update_or_create(run_id=self._run.pk, key=key, defaults={"value": value})
                if mark_retries:
                    transitions.mark_has_retries(run_id=self._run.pk)
                if child is not None:
                    # The child's row and its first record commit with the step that started it.
                    transitions.start(run=child)
                    ledger.build(child, kind=LedgerKind.RUN_STARTED, seq=0,
                                 body={"input": child.input, "parent": self._run.id},
                                 app=self._config.app_name).save(force_insert=True)
                for record in records:
                    if record.kind in FAST_KINDS:
                        record.save(force_insert=True)  # its step's unique (run, seq) already guards it
                    else:
                        ledger.append(record)
        except IntegrityError as err:
            # Another worker recorded this step first: the run is theirs now.
            raise LeaseLost(f"{self._run.id}: {err}") from err
        if step is not None:
            self._steps[step.seq] = step

    def _commit_fast(self, step: Step, record: LedgerRecord) -> bool:
        faults.point(FaultPoint.STEP_COMMIT)
        now = clock.now()
        step.created_at = now
        renew = time.monotonic() >= self._renew_after
        try:
            written = fastpath.write_step(step=step, record=record, worker_id=self._worker_id,
                                          lease_until=now + self._lease, now=now, renew=renew)
        except IntegrityError as err:
            raise LeaseLost(f"{self._run.id}: {err}") from err
        if written:
            self._steps[step.seq] = step
            if renew:
                self._lease_renewed()
        return written

    def _commit_effect(self, op: Operation, step: Step, record: LedgerRecord, *, call_seconds: float) -> None:
        """Write the checkpoint of a call the vendor carried out, trying again before giving up.

        A dropped connection is ridden out by `_commit` for as long as this worker's lease lasts
        (counting the renewals of the heartbeat while the vendor answered). An error the database
        answered is tried again after 50, 200 and 800 ms. Past either, every further call of the
        run is refused, so a workflow that catches the failure cannot repeat the effect unrecorded.
        """
        delays = iter(LEDGER_RETRY_DELAYS)
        while True:
            failure: BaseException
            try:
                self._commit(step, [record], call_seconds=call_seconds)
                return
            except (LeaseLost, Cancelled):
                raise
            except reconnect.Unreachable as gone:
                failure, delay = gone, None
            except Exception as err:
                # A record that cannot be serialised fails the same way every time.
                failure, delay = err, None if isinstance(err, (TypeError, ValueError)) else next(delays, None)
            if delay is None:
                self._poisoned = op.id
                raise SanomaError(f"{op.id} succeeded, but the ledger could not record it: {failure}",
                                  code=ErrorCode.LEDGER_WRITE_FAILED, data={"op": op.id}) from failure
            log.warning("recording %s of run %s failed (%s); trying again", op.id, self._run.id,
                        str(failure).strip().split("\n")[0], extra={"run_id": self._run.id})
            clock.sleep(delay)

    def _lease_left(self, call_seconds: float) -> float:
        """Seconds this worker may still spend writing before its lease could run out, less a margin
        so it gives up before another worker may take the run over."""
        lease = self._lease.total_seconds()
        renewed = self._renew_after - lease / 3
        if call_seconds > lease / 3:  # the heartbeat renewed the lease while the vendor answered
            renewed = max(renewed, time.monotonic() - lease / 3 - heartbeat.TICK_SECONDS)
        margin = min(2.0, lease / 10)
        return renewed + lease - margin - time.monotonic()

    def _lease_renewed(self) -> None:
        self._renew_after = time.monotonic() + self._lease.total_seconds() / 3

    def _close(self) -> None:
        """The advance is over: any later call through this ctx (kept by a workflow) is refused."""
        self._ended = True


if TYPE_CHECKING:
    from runs.ctx import Ctx

    def _typed_as_documented(ctx: RunContext) -> Ctx:
        """mypy holds the engine's ctx to the typed `Ctx` authors annotate with."""
        return ctx
