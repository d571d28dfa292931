"""Advancing a run: claim its lease, replay the workflow from the top, and end or suspend it.

One advance per run at a time: the claim is a conditional UPDATE (portable to SQLite), so a
task django-q2 delivers twice, or two hosts sweeping at once, still run the body once. Every
change to the run row goes through `runs.engine.transitions`.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from enum import StrEnum
from typing import Any

from django.conf import settings
from pydantic import ValidationError
from pydantic_core import to_jsonable_python

from connectors.errors import InvalidInput, SanomaError, describe_issues, error_to_dict, issues_of
from runs import ledger
from runs.config.registry import get_config
from runs.config.resolution import ResolvedConfig
from runs.config.versioning import version_of
from runs.engine import clock, effects, faults, history, pauses, reconnect, transitions
from runs.engine.context import RunContext
from runs.engine.faults import FaultPoint
from runs.engine.segment import Segment
from runs.engine.stops import Cancelled, LeaseLost, Rewind, Suspend
from runs.errors import RunCode
from runs.limits import overrides as limit_overrides
from runs.models import Approval, DecisionMessage, LedgerKind, LedgerRecord, Run, RunStatus
from runs.telemetry import metrics, tracing

log = logging.getLogger("sanoma.engine")

# The records of calls not yet settled that an advance reads back (when the run has any).
CALL_HISTORY_KINDS = (LedgerKind.OP_ATTEMPT_FAILED, LedgerKind.OP_INTENT, LedgerKind.OP_RESOLVED)


class Advanced(StrEnum):
    """What one advance did to its run."""

    FINISHED = "finished"
    FAILED = "failed"
    WAITING = "waiting"  # suspended: no process holds it until something wakes it
    QUEUED = "queued"  # handed back: the segment ran long, or a signal arrived while it ran
    SKIPPED = "skipped"  # not claimable here: another worker holds it, it ended, or another version runs it
    LOST = "lost"  # taken over by another worker, or cancelled, while this advance ran


def claim(run_id: str, *, worker_id: str, versions: Sequence[str]) -> Run | None:
    """Take the run's lease if it is free and its version is one of `versions`; the claimed run, or None."""
    now = clock.now()
    return transitions.claim(run_id=run_id, worker_id=worker_id, versions=versions, now=now,
                             lease_until=now + timedelta(seconds=settings.SANOMA_LEASE_SECONDS))


def advance(run_id: str, *, worker_id: str, config: ResolvedConfig | None = None) -> Advanced:
    """Advance one run by one segment and say what happened."""
    config = config or get_config()
    claimed_at = time.monotonic()
    run = claim(run_id, worker_id=worker_id, versions=config.owned_versions)
    if run is None:
        other = (Run.objects.filter(pk=run_id).exclude(app_version__in=config.owned_versions)
                 .values_list("workflow", "app_version").first())
        if other:
            workflow, version = other
            log.warning("leaving run %s alone: it runs version %s; this worker runs %s (%s)", run_id, version,
                        config.version, version_of(config, workflow), extra={"run_id": run_id})
        return Advanced.SKIPPED
    try:
        if tracing.ON:
            return tracing.segment(run, lambda: _advance_held(run, worker_id, config, claimed_at))
        return _advance_held(run, worker_id, config, claimed_at)
    finally:
        metrics.flush()  # the segment's steps, added up, written to the metrics files in one go


def _advance_held(run: Run, worker_id: str, config: ResolvedConfig, claimed_at: float) -> Advanced:
    run_id = run.pk
    try:
        try:
            return _advance_claimed(run, worker_id, config, claimed_at)
        except Exception as err:
            if not (reconnect.connection_lost(err) and reconnect.can_reconnect()):
                raise
            # A read outside the workflow (loading the run's steps, approvals, messages) lost the
            # connection: not the run's failure, nor the task's. The run goes back to the queue.
            log.warning("run %s: the database connection was lost (%s); handing the run back", run_id,
                        str(err).strip().split("\n")[0], extra={"run_id": run_id})
            reconnect.discard()
            handed = reconnect.ride_out(
                lambda: transitions.hand_back(run_id=run_id, worker_id=worker_id, now=clock.now()),
                deadline=lambda: _write_deadline(claimed_at), what=f"run {run_id}: handing it back")
            return Advanced.QUEUED if handed else Advanced.LOST
    except reconnect.Unreachable as gone:
        # The database stayed away as long as the lease allowed: nothing more is written (nor
        # could be); the run is taken over by a worker once its lease runs out. Never failed.
        log.warning("run %s: advance stopped: %s", run_id, gone, extra={"run_id": run_id})
        return Advanced.LOST


def _write_deadline(claimed_at: float) -> float:
    """Until when (time.monotonic()) a write may be tried again: before the lease could run out."""
    lease = float(settings.SANOMA_LEASE_SECONDS)
    return claimed_at + lease - min(2.0, lease / 10)


def _advance_claimed(run: Run, worker_id: str, config: ResolvedConfig, claimed_at: float) -> Advanced:
    run_id = run.pk
    deadline: Callable[[], float] = lambda: _write_deadline(claimed_at)
    faults.point(FaultPoint.BEFORE_LOAD)
    held = pauses.holding_start(run.workflow)
    limit_overrides.current()  # once a second at most: what the segment's unlimited calls look at, with no query
    if held is not None and not run.steps.exists():
        # A paused workflow starts nothing new: the run stays queued until the unpause.
        return Advanced.QUEUED if transitions.park(run_id=run.pk, worker_id=worker_id,
                                                   waiting_for=pauses.waiting_for(held), now=clock.now()) \
            else Advanced.LOST
    definition = config.workflows.get(run.workflow)
    if definition is None:
        missing = SanomaError(f"Workflow {run.workflow} is not in {config.version}", code=RunCode.WORKFLOW_NOT_FOUND,
                              data={"workflow": run.workflow, "version": config.version})
        return _fail(run, worker_id, config, missing, seq=1, deadline=deadline)
    # Only the run's current generation is replayed: what follows its latest ctx.continue_as_new.
    recorded = history.load(run)
    segment = Segment(run=run, config=config, worker_id=worker_id, steps=recorded.steps, base=recorded.base,
                      generation=recorded.generation, segment_seconds=settings.SANOMA_SEGMENT_SECONDS)
    ctx = RunContext(
        segment,
        definition=definition,
        approvals=list(Approval.objects.filter(run=run, seq__gt=recorded.base)) if run.has_approvals else [],
        messages=(list(DecisionMessage.objects.filter(approval__run=run, applied=False).order_by("id"))
                  if run.has_approvals else []),
        attempts=(list(LedgerRecord.objects.filter(run_id=run.pk, kind__in=CALL_HISTORY_KINDS,
                                                   seq__gt=recorded.base)) if run.has_retries else []),
    )
    segment.input = recorded.input

    def parsed(input: Any) -> Any:
        try:
            return definition.input.model_validate(input)
        except ValidationError as err:
            issues = issues_of(err)
            raise InvalidInput(f"The input does not match {definition.name}'s schema: {describe_issues(issues)}",
                               data={"issues": issues}) from None

    try:
        while True:
            try:
                return _run_body(run, worker_id, config, segment, lambda payload: definition.run(ctx, payload),
                                 parsed)
            except Rewind:
                # A call's checkpoint written behind (`runs.engine.effects`) could not be written, at
                # a suspension or with the run's end: the body runs again, and that call fails where
                # the workflow made it.
                segment.rewind()
            except (LeaseLost, Cancelled) as stop:
                log.info("run %s: advance stopped (%s)", run_id, type(stop).__name__, extra={"run_id": run_id})
                return Advanced.LOST
    finally:
        segment.close()


def _run_body(run: Run, worker_id: str, config: ResolvedConfig, segment: Segment, body: Callable[[Any], Any],
              parsed: Callable[[Any], Any]) -> Advanced:
    """Run the workflow's body from the top and end, suspend or hand back the run as it says."""
    run_id = run.pk
    deadline = segment.write_deadline
    try:
        output = history.run_generations(segment, segment.input, body, parsed)
    except Suspend as suspension:
        segment.flush()  # a call's checkpoint waiting behind is written before the run waits
        return _suspend(run, worker_id, segment.signal_gen, suspension, deadline=deadline)
    except Exception as err:
        if reconnect.connection_lost(err) and reconnect.can_reconnect():
            # A read lost the database connection (the engine's writes ride that out themselves):
            # not the workflow's failure. The run goes back to the queue; its next advance replays.
            log.warning("run %s: the database connection was lost (%s); handing the run back", run_id,
                        str(err).strip().split("\n")[0], extra={"run_id": run_id})
            reconnect.discard()
            segment.flush()
            return _suspend(run, worker_id, segment.signal_gen, Suspend("segment", requeue=True), deadline=deadline)
        return _fail(run, worker_id, config, err, seq=segment.next_seq, deadline=deadline, segment=segment)
    return _finish(run, worker_id, config, output, seq=segment.next_seq, deadline=deadline, segment=segment)


def _end(run: Run, worker_id: str, config: ResolvedConfig, *, status: RunStatus, kind: LedgerKind,
         body: dict[str, Any], seq: int, deadline: Callable[[], float], result: Any = None,
         error: Any = None, segment: Segment | None = None) -> Advanced:
    record = ledger.build(run, kind=kind, seq=seq, body=body, app=config.app_name)
    behind = segment.take_behind() if segment is not None else None
    if segment is not None and behind is not None:
        # The last call's checkpoint waits behind: it is written with the end, in one transaction.
        try:
            ended = effects.record(segment, behind.op, behind.checkpoint, call_seconds=behind.call_seconds,
                                   first=lambda: _end_with_call(run, worker_id, segment, behind, status=status,
                                                                record=record, result=result, error=error))
        except effects.Unrecorded as failed:
            segment.unrecorded_call(behind, failed.error)
            raise Rewind(run.pk) from None
        metrics.call_settled(behind.op, "ok")
        if ended is not None:
            if ended:
                metrics.run_ended(run.workflow, status.value, error=error)
            return Advanced(status.value) if ended else Advanced.LOST
        # Written on its own (the end's lease check failed: a cancel or a lost lease raised by now).
    faults.point(FaultPoint.BEFORE_END)

    def write() -> bool:
        reconnect.unsaved(record)  # a try rolled back with the connection may have saved it
        return transitions.end(run_id=run.pk, worker_id=worker_id, status=status, result=result, error=error,
                               now=clock.now(), record=record, parent_id=run.parent_id,
                               has_approvals=run.has_approvals)

    def landed() -> bool | None:  # the end and its record commit together
        return True if LedgerRecord.objects.filter(record_id=record.record_id).exists() else None

    ended = reconnect.ride_out(write, deadline=deadline, landed=landed, what=f"run {run.pk}: its end ({status})")
    if ended:
        metrics.run_ended(run.workflow, status.value, error=error)
    return Advanced(status.value) if ended else Advanced.LOST


def _end_with_call(run: Run, worker_id: str, segment: Segment, behind: effects.Behind, *, status: RunStatus,
                   record: LedgerRecord, result: Any, error: Any) -> bool | None:
    """One try of the run's end with its last call's checkpoint, in one transaction (one statement
    on PostgreSQL). True when written; None when the lease check matched nothing (the checkpoint
    is then written on its own, which tells a cancel from a lost lease). A dropped connection is
    ridden out here; an error the database answered is tried again by `effects.record`."""
    checkpoint = behind.checkpoint
    step, called = checkpoint.step, checkpoint.records[0]
    assert step is not None
    if faults.any_armed():  # the fault points of both writes, in the order they were made apart
        faults.point(FaultPoint.BEFORE_CALL)
        faults.point(FaultPoint.BEFORE_END)

    def write() -> bool:
        reconnect.unsaved(step, called, record)  # a try rolled back with the connection may have saved them
        return segment.write_with_end(checkpoint, status=status, record=record, result=result, error=error)

    def landed() -> bool | None:  # the step, its record, the end and its record commit together
        return True if LedgerRecord.objects.filter(record_id=record.record_id).exists() else None

    written = reconnect.ride_out(write, deadline=lambda: segment.write_deadline(behind.call_seconds), landed=landed,
                                 what=f"run {run.pk}: writing step {step.seq} with its end ({status})")
    if not written:
        return None
    segment.steps[step.seq] = step
    metrics.step_written(run.workflow, step.kind)
    if tracing.ON:
        tracing.step_written(step)
    return True


def _finish(run: Run, worker_id: str, config: ResolvedConfig, output: Any, *, seq: int,
            deadline: Callable[[], float], segment: Segment | None = None) -> Advanced:
    try:
        result = to_jsonable_python(output.model_dump(mode="json") if hasattr(output, "model_dump") else output)
    except Exception as err:
        bad = SanomaError(f"The workflow returned a value that is not JSON: {err}", code=RunCode.BAD_RETURN_VALUE,
                          data={"type": type(output).__name__})
        return _fail(run, worker_id, config, bad, seq=seq, deadline=deadline, segment=segment)
    return _end(run, worker_id, config, status=RunStatus.FINISHED, kind=LedgerKind.RUN_FINISHED,
                body={"output": result}, seq=seq, result=result, deadline=deadline, segment=segment)


def _fail(run: Run, worker_id: str, config: ResolvedConfig, err: BaseException, *, seq: int,
          deadline: Callable[[], float], segment: Segment | None = None) -> Advanced:
    error = error_to_dict(err)
    if not isinstance(err, SanomaError) or err.code is None:
        log.info("run %s failed: %s", run.id, err, exc_info=not isinstance(err, SanomaError), extra={"run_id": run.id})
    return _end(run, worker_id, config, status=RunStatus.FAILED, kind=LedgerKind.RUN_FAILED, body={"error": error},
                seq=seq, error=error, deadline=deadline, segment=segment)


def _suspend(run: Run, worker_id: str, signal_gen: int, suspension: Suspend, *,
             deadline: Callable[[], float]) -> Advanced:
    # Both changes name the state they leave: one that landed with its answer lost matches nothing
    # when written again, and the advance reads as lost while the run waits as it should.
    now = clock.now()
    if not suspension.requeue and reconnect.ride_out(
        lambda: transitions.suspend(run_id=run.pk, worker_id=worker_id, signal_gen=signal_gen,
                                    waiting_for=suspension.waiting_for, wake_at=suspension.wake_at, now=now),
        deadline=deadline, what=f"run {run.pk}: suspending it",
    ):
        return Advanced.WAITING
    # Handed back: the segment ran long, or a signal arrived while this advance ran.
    handed = reconnect.ride_out(lambda: transitions.hand_back(run_id=run.pk, worker_id=worker_id, now=now),
                                deadline=deadline, what=f"run {run.pk}: handing it back")
    return Advanced.QUEUED if handed else Advanced.LOST


def wake(run_id: str) -> bool:
    """Make a waiting run runnable now and enqueue it; a running one is told to look again.

    Call inside the transaction that records why (a decision, a withdrawal).
    """
    return transitions.wake(run_id=run_id, now=clock.now())
