"""The call pipeline: every call a workflow makes of an operation, and every child run it starts.

A call is one step. Replayed, it answers what was recorded. New, it is checked against the
pauses, decided by the policy (a hold waits for its approval, see `runs.engine.holds`), and then
either refused (its step records the denial or the rejection) or carried out: an operation's
driver is called, with retries and in-doubt handling; a child run is started
(`runs.engine.children`). Each of those is an `Effect`; the steps around it are the same.
"""
from __future__ import annotations

import logging
import random
import time
from collections.abc import Sequence
from typing import Any, Protocol, cast

from pydantic import BaseModel, ValidationError

from connectors.drivers import CallContext, Driver
from connectors.errors import (
    DriverError,
    ErrorCode,
    SanomaError,
    describe_issues,
    error_from_dict,
    error_to_dict,
    issues_of,
)
from connectors.operations import Operation
from runs import ledger
from runs.approvals.rules import rejection_error
from runs.engine import calling, clock, doubts, effects, faults, pauses, secrets
from runs.engine.faults import FaultPoint
from runs.engine.holds import Holds
from runs.engine.requests import NO_OPTIONS, CallOptions, parse_op_input
from runs.engine.segment import Checkpoint, Segment
from runs.engine.stops import Suspend
from runs.errors import RunCode
from runs.limits import gate
from runs.models import Approval, LedgerKind, LedgerRecord, StepKind
from runs.policies.decisions import Decision, DecisionKind
from runs.spend import services as spend
from runs.telemetry import metrics, tracing

log = logging.getLogger("sanoma.engine")

LEDGER_RETRY_DELAYS = effects.LEDGER_RETRY_DELAYS


class Effect(Protocol):
    """What one kind of call does around the pipeline's shared steps."""

    pausable: bool  # a pause of its operation (or connector) holds it
    about: dict[str, Any]  # what a denial's data names beside the operation and the reason

    def replay(self, output: Any) -> Any:
        """What a recorded call returns, from its recorded output."""

    def prepare(self, seq: int) -> tuple[dict[str, Any], str | None]:
        """The input the policy sees (as JSON) and the call's target."""

    def refuse(self, seq: int, decision: Decision, error: SanomaError, approval: Approval | None) -> None:
        """Record the call refused (denied by the policy, or its approval rejected or withdrawn)."""

    def carry_out(self, seq: int, decision: Decision) -> Any:
        """Do what the call does, record it, and return what the workflow gets."""


def policy_words(op_id: str, reason: str) -> str:
    """A denial's reason in the policy's own words: without the `<op> was denied by policy: ` a
    policy (Cedar's) may have put before them, which the error's message says already."""
    return reason.removeprefix(f"{op_id} was denied by policy: ")


def policy_denied(op: Operation, reason: str, **about: Any) -> SanomaError:
    return SanomaError(
        reason if reason.startswith(op.id) else f"{op.id} was denied by policy: {reason}",
        code=ErrorCode.POLICY_DENIED,
        data={"op": op.id, "reason": reason, **about},
        name="PolicyDeniedError",
    )


class Calls:
    """The calls of one advance: the pipeline, over its segment and its holds."""

    def __init__(self, segment: Segment, holds: Holds, history: Sequence[LedgerRecord] = ()) -> None:
        self.segment = segment
        self.holds = holds
        self.history = doubts.CallHistory(history)

    def call(self, op: Operation, payload: Any, options: CallOptions = NO_OPTIONS) -> Any:
        """Call an operation (`ctx.<vendor>.<resource>.<op>(payload)`): its output model."""
        self.segment.check_open()
        return self.through(op, _OperationCall(self, op, parse_op_input(op, payload), options))

    def through(self, op: Operation, effect: Effect) -> Any:
        """One call as a step: replayed, held, refused, or carried out by `effect`."""
        segment = self.segment
        seq = segment.take_seq()
        step = segment.replayed(seq, StepKind.CALL, op.id)
        if step is not None:
            segment.next_seq = step.next_seq
            if step.error is not None:
                raise error_from_dict(step.error)
            return effect.replay(step.output)
        if segment.unrecorded:
            self._unrecorded(op, seq)
        segment.check_time()
        if tracing.ON:
            tracing.call_step(seq, op)
        if effect.pausable:
            held = pauses.holding_call(op)
            if held is not None:  # the run waits for the unpause instead of failing
                raise Suspend(pauses.waiting_for(held))
        input_json, target = effect.prepare(seq)
        decision, approval = self.holds.decide(op, seq, input_json, target)
        error: SanomaError | None = None
        if approval is not None:
            error = rejection_error(approval)
        elif decision.kind == DecisionKind.DENY:
            error = policy_denied(op, decision.reason or "denied", **effect.about)
        if error is not None:
            effect.refuse(seq, decision, error, approval)
            raise error
        return effect.carry_out(seq, decision)

    def _unrecorded(self, op: Operation, seq: int) -> None:
        """The body runs again after a rewind (`runs.engine.effects`): the call at `seq`, whose
        checkpoint could not be written, fails as it would have, and refuses every later call."""
        failed = self.segment.unrecorded.pop(seq, None)
        if failed is None:
            return
        op_id, error = failed
        if op_id != op.id:
            raise SanomaError(
                f"Run {self.segment.run.id} no longer replays: step {seq} was call {op_id}, now call {op.id}. "
                "A workflow must make the same calls in the same order on every replay",
                code=RunCode.REPLAY_DIVERGED, data={"seq": seq, "was": f"call {op_id}", "now": f"call {op.id}"})
        self.segment.poison(op_id)
        raise error

    # ---- an operation's driver --------------------------------------------------------------

    def call_driver(self, op: Operation, seq: int, parsed: BaseModel, input_json: dict, decision: Decision,
                    options: CallOptions) -> Any:
        """Attempt the call until it succeeds, fails for good, or waits durably for its next try.

        Each failed attempt is recorded (`op.attempt_failed`: the error and when the next try is);
        an idempotent operation is tried again while its retry policy allows and the error is
        retryable. A wait up to a few seconds is slept here; a longer one suspends the run until
        the next try's time, and the attempt count survives in those records."""
        segment, run = self.segment, self.segment.run
        driver = segment.config.drivers.get(op.id)
        policy = calling.retry_policy(op, options.retry)
        tries = policy.attempts if op.idempotent else 1
        timeout = options.timeout or op.timeout or calling.default_timeout()
        attempt, next_at = self.history.attempts.get(seq, (0, None))
        if next_at is not None and clock.now_ms() < next_at:
            raise Suspend("retry", wake_at=clock.from_ms(next_at))
        in_doubt = op.idempotency_key == "ignored" and not op.idempotent
        if in_doubt and seq in self.history.doubts:
            settled = doubts.resolution(segment, self.history, op, seq, parsed, timeout)
            metrics.call_in_doubt(op)
            if settled["happened"]:
                output = op.output.model_validate(settled["output"])
                self.settle(op, seq, input_json, decision, output=output, attempt=self.history.doubts[seq][0],
                            extra={"resolved_by": settled["by"]})
                return output
            attempt = max(attempt, self.history.doubts[seq][0])  # it did not happen: call again
        # A sandbox run's calls go to its fakes, never the vendor: they take no share of its limits.
        # An operation declaring no limit pays a dict lookup here (`gate.overridden`), no query.
        limits = gate.applied_limits(op, input_json, queued_at=run.queued_at) if segment.sandbox is None and (
            op.limit or op.vendor_limit or gate.overridden(op)) else []
        started = time.monotonic()
        while True:
            attempt += 1
            allowed = timeout
            # Its limits' start time and slots, across every worker: a short wait is slept here, a
            # longer one suspends the run (`waiting for rate limit of <vendor>`), before any intent.
            passage = gate.enter(limits, holder=f"{run.id}:{seq}", timeout=timeout) if limits else None
            lands_until = 0  # an in-doubt attempt's: until when (epoch ms) it may still land at the vendor
            if in_doubt:
                try:
                    allowed = self._intent(op, seq, attempt, input_json, timeout)
                except BaseException:
                    if passage is not None:
                        passage.leave()
                    raise
                lands_until = self.history.lands_until(seq, timeout)
            context = CallContext(
                idempotency_key=f"{run.id}:{seq}", run_id=run.id, op_id=op.id, attempt=attempt,
                by=run.started_by, secrets=secrets.for_connector(op.vendor), timeout=allowed,
                deadline=time.time() + allowed,
            )
            try:
                if driver is None:
                    raise SanomaError(f"{op.id} has no driver", code=ErrorCode.NO_DRIVER, data={"op": op.id})
                try:
                    with segment.heartbeat():
                        # A limited call waits for its start time on the thread that sends it (`gate.Timed`).
                        timed = driver if passage is None else cast(Driver, gate.Timed(driver, passage))
                        reply = _invoke(timed, op, parsed, context, allowed, seq)
                finally:
                    if passage is not None:
                        passage.leave()
                try:
                    output = op.output.model_validate(reply)
                except ValidationError as err:
                    raise DriverError(
                        f"The reply of {op.id} does not match its output schema: {describe_issues(issues_of(err))}",
                        retryable=False,
                    ) from None
            except Exception as err:
                if limits:
                    gate.vendor_said_wait(limits, err)  # a 429's Retry-After holds the limit for every worker
                if in_doubt and getattr(err, "may_have_acted", False):
                    # Sent, and its answer lost (the connection dropped, no answer in time): the vendor
                    # may have acted. Left in doubt as a dead worker's call is (its intent unsettled),
                    # never sent again blindly: past the attempt's deadline the reconcile read (or an
                    # operator) says whether it happened.
                    log.warning("run %s: %s may have reached %s (%s); it is in doubt until the vendor is asked",
                                run.id, op.id, op.vendor, err, extra={"run_id": run.id})
                    raise Suspend("in_doubt", wake_at=clock.from_ms(lands_until)) from None
                if op.idempotent and attempt < tries and getattr(err, "retryable", None) is True:
                    wait = policy.delay(attempt, retry_after=getattr(err, "retry_after", None),
                                        spread=random.random())
                    self._attempt_failed(op, seq, attempt, err, wait)
                    if wait > calling.DURABLE_RETRY_SECONDS:
                        raise Suspend("retry", wake_at=clock.from_ms(self.history.attempts[seq][1] or 0)) from None
                    clock.sleep(wait)
                    continue
                duration = int((time.monotonic() - started) * 1000)
                self.settle(op, seq, input_json, decision, error=err, attempt=attempt, duration_ms=duration)
                raise
            faults.point(FaultPoint.AFTER_DRIVER_CALL)
            duration = int((time.monotonic() - started) * 1000)
            self.settle(op, seq, input_json, decision, output=output, attempt=attempt, duration_ms=duration)
            return output

    def _intent(self, op: Operation, seq: int, attempt: int, input_json: dict, timeout: float) -> float:
        """Record the attempt's intent before an in-doubt call; the seconds left for the call.

        A worker that dies before recording the reply leaves this behind, and the run is then in
        doubt instead of calling again. The intent records the attempt's deadline: past it the
        attempt is abandoned, and a reconcile read of a worker taking the run over waits for it
        (see `runs.engine.doubts`)."""
        segment, run = self.segment, self.segment.run
        deadline_ms = clock.now_ms() + int(timeout * 1000)
        intent = segment.record(LedgerKind.OP_INTENT, seq, {"op": op.id, "attempt": attempt,
                                                           "deadline": deadline_ms,
                                                           "input": ledger.mask_opaque(input_json, op.opaque),
                                                           "idempotency_key": f"{run.id}:{seq}"},
                                key=f"{seq}:{attempt}")
        segment.commit(Checkpoint(records=[intent], retries=True))
        allowed = (deadline_ms - clock.now_ms()) / 1000  # less what writing the intent took
        if allowed <= 0:
            # Writing the intent outlasted the call's time (a database blip ridden out): the
            # call is not sent; the next advance settles this attempt as one in doubt.
            raise Suspend("segment", requeue=True)
        self.history.sent[seq] = (clock.now_ms(), deadline_ms)
        return allowed

    def _attempt_failed(self, op: Operation, seq: int, attempt: int, err: BaseException, wait: float) -> None:
        """Record a failed attempt and when the next one is (with the run's flag that it has such records)."""
        next_at = clock.now_ms() + int(wait * 1000)
        body = {"op": op.id, "attempt": attempt, "error": error_to_dict(err), "next_at": next_at,
                "wait_ms": int(wait * 1000)}
        record = self.segment.record(LedgerKind.OP_ATTEMPT_FAILED, seq, body, key=f"{seq}:{attempt}")
        self.segment.commit(Checkpoint(records=[record], retries=True))
        self.history.attempts[seq] = (attempt, next_at)
        metrics.call_retried(op)

    # ---- the call's checkpoint --------------------------------------------------------------

    def settle(
        self,
        op: Operation,
        seq: int,
        input_json: dict,
        decision: Decision,
        *,
        output: BaseModel | None = None,
        error: BaseException | None = None,
        attempt: int | None = None,
        duration_ms: int = 0,
        approval: Approval | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Write the call's checkpoint and its `op.called` record together (and, for a money call
        whose decision reserved its amount, the reservation settled by that record)."""
        decided = decision.to_dict()
        body: dict[str, Any] = {
            "op": op.id,
            "effect": op.effect,
            "input": ledger.mask_opaque(input_json, op.opaque),
            "decision": decided,
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
        step = self.segment.step(seq, StepKind.CALL, op.id, output=output_json, error=error_json, decision=decided,
                                 attempt=attempt or 1)
        checkpoint = Checkpoint(step, [self.segment.record(LedgerKind.OP_CALLED, seq, body)])
        reserved = self.holds.reserved.pop(seq, None) if self.holds.reserved else None
        if reserved is not None:
            checkpoint.money = spend.settlement_of(reserved, op, body)
        if output is None:
            self.segment.commit(checkpoint)
            metrics.call_settled(op, call_outcome(error, approval))
            return
        # The vendor acted: its checkpoint waits behind the workflow's code when it may (written
        # before the engine next acts, or with the run's end: `runs.engine.effects`); else it is
        # written now, tried again before giving up; past that every further call is refused, so a
        # workflow that catches the failure cannot repeat the effect unrecorded.
        call_seconds = duration_ms / 1000
        if self.segment.can_defer(checkpoint):
            self.segment.defer(op, checkpoint, call_seconds=call_seconds)
            return
        try:
            effects.record(self.segment, op, checkpoint, call_seconds=call_seconds)
        except effects.Unrecorded as failed:
            self.segment.poison(op.id)
            raise failed.error from failed.error.__cause__
        metrics.call_settled(op, "ok")


def call_outcome(error: BaseException | None, approval: Approval | None) -> str:
    """A settled call's outcome as the metrics count it: ok, denied, rejected or failed."""
    if error is None:
        return "ok"
    if approval is not None:
        return "rejected"
    return "denied" if getattr(error, "code", None) == ErrorCode.POLICY_DENIED else "failed"


def _invoke(driver: Driver, op: Operation, parsed: BaseModel, context: CallContext, timeout: float, seq: int) -> Any:
    """One attempt of the driver, timed for `sanoma_call_duration_seconds` (and traced when on)."""
    started = time.monotonic()
    try:
        if tracing.ON:
            return tracing.call(seq, op, context.attempt,
                                lambda: calling.invoke(driver, op, parsed, context, timeout))
        return calling.invoke(driver, op, parsed, context, timeout)
    finally:
        metrics.call_attempted(op, time.monotonic() - started)


class _OperationCall:
    """The effect of a call of a vendor's (or the runtime's) operation: its driver is called."""

    pausable = True
    about: dict[str, Any] = {}

    def __init__(self, calls: Calls, op: Operation, parsed: BaseModel, options: CallOptions) -> None:
        self.calls, self.op, self.parsed, self.options = calls, op, parsed, options
        self.input_json: dict[str, Any] = {}

    def replay(self, output: Any) -> Any:
        return self.op.output.model_validate(output)

    def prepare(self, seq: int) -> tuple[dict[str, Any], str | None]:
        op = self.op
        self.input_json = self.parsed.model_dump(mode="json")
        target = None
        if op.target is not None:
            target = op.target(self.parsed)
            if not isinstance(target, str):
                raise SanomaError(f"The target of {op.id} must be a string; it gave {type(target).__name__}",
                                  code=ErrorCode.CONFIG_INVALID, data={"op": op.id})
        return self.input_json, target

    def refuse(self, seq: int, decision: Decision, error: SanomaError, approval: Approval | None) -> None:
        self.calls.settle(self.op, seq, self.input_json, decision, error=error, approval=approval)

    def carry_out(self, seq: int, decision: Decision) -> Any:
        return self.calls.call_driver(self.op, seq, self.parsed, self.input_json, decision, self.options)
