"""The two-step waits: `ctx.wait_message` and `ctx.wait_run`.

A wait is two steps: its start (what it waits for and its deadline, fixed when the run first
reaches it, so a replay keeps the same deadline) and what it read (the message, or how the child
ended, so a replay returns the same one). Until there is something to read, the run suspends;
past the deadline, the read step records `wait_timed_out`.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from connectors.errors import SanomaError, error_from_dict, error_to_dict
from runs.engine import children, clock
from runs.engine.faults import FaultPoint
from runs.engine.history import Replayed
from runs.engine.segment import Checkpoint, Segment
from runs.engine.stops import Suspend
from runs.errors import RunCode
from runs.models import ENDED_STATUSES, LedgerKind, Run, RunMessage, RunStatus, Step, StepKind


def wait_steps(segment: Segment, kind: StepKind, end_kind: StepKind, name: str, timeout_ms: int | None,
               began_with: dict[str, Any], *, read: Callable[[int, int | None], Replayed],
               first: Callable[[], None] | None = None) -> Replayed:
    """The wait's two steps: its start, then what it read (`read(seq, until)`: a step, or it
    suspends; `first` checks the wait before its start is written). Raises the read's recorded
    error; returns its step."""
    wait_seq = segment.take_seq()
    began: Replayed | None = segment.replayed(wait_seq, kind, name)
    if began is None:
        if first is not None:
            first()
        segment.check_time()
        until = None if timeout_ms is None else clock.now_ms() + timeout_ms
        began = segment.step(wait_seq, kind, name, output={**began_with, "until": until})
        segment.commit(Checkpoint(began), point=FaultPoint.BEFORE_WAIT)
    assert began.output is not None  # a recorded wait always has its deadline
    end_seq = segment.take_seq()
    step = segment.replayed(end_seq, end_kind, name)
    if step is None:
        step = read(end_seq, began.output.get("until"))
    if step.error is not None:
        raise error_from_dict(step.error)
    return step


def timed_out(segment: Segment, kind: StepKind, name: str, seq: int, what: str, data: dict[str, Any]) -> Step:
    """A wait's deadline passed: its read step records `wait_timed_out`."""
    until = clock.from_ms(data["until"]).isoformat()
    error = SanomaError(f"{what} before the wait's deadline ({until})", code=RunCode.WAIT_TIMED_OUT,
                        data=data, name="WaitTimedOutError")
    step = segment.step(seq, kind, name, error=error_to_dict(error))
    segment.commit(Checkpoint(step))
    return step


def read_message(segment: Segment, topic: str, seq: int, until: int | None) -> Step:
    """Read the oldest unread message on `topic` (its step, its `message.received` record and
    its read mark in one transaction); time out past the deadline; else suspend."""
    message = (RunMessage.objects.filter(run_id=segment.run.pk, topic=topic, read_seq__isnull=True)
               .order_by("id").first())
    if message is not None:
        segment.check_time()
        body = {"topic": topic, "payload": message.payload, "by": message.sent_by, "message": message.message_id}
        record = segment.record(LedgerKind.MESSAGE_RECEIVED, seq, body, actor=message.sent_by)
        step = segment.step(seq, StepKind.MESSAGE, topic,
                            output={"payload": message.payload, "message": message.message_id, "by": message.sent_by})
        segment.commit(Checkpoint(step, [record], read=message))
        return step
    if until is not None and clock.now_ms() >= until:
        return timed_out(segment, StepKind.MESSAGE, topic, seq, f"No message on {topic!r} came",
                         {"topic": topic, "until": until})
    raise Suspend("message", wake_at=None if until is None else clock.from_ms(until))


def read_child_end(segment: Segment, run_id: str, seq: int, until: int | None) -> Step:
    """Read how the child ended (its step and its `run.child_ended` record together); time
    out past the deadline; else suspend until its end wakes this run."""
    child = Run.objects.filter(pk=run_id).only("id", "status", "result", "error").first()
    if child is not None and child.status in ENDED_STATUSES:
        segment.check_time()
        body: dict[str, Any] = {"child": run_id, "status": child.status}
        if child.status == RunStatus.FINISHED:
            body["output"] = child.result
            step = segment.step(seq, StepKind.RUN_END, run_id, output={"status": child.status, "output": child.result})
        else:
            body["error"] = error_to_dict(children.ended_error(child))
            step = segment.step(seq, StepKind.RUN_END, run_id, error=body["error"])
        segment.commit(Checkpoint(step, [segment.record(LedgerKind.CHILD_ENDED, seq, body)]))
        return step
    if until is not None and clock.now_ms() >= until:
        return timed_out(segment, StepKind.RUN_END, run_id, seq, f"Child run {run_id} had not ended",
                         {"child": run_id, "until": until})
    raise Suspend("run", wake_at=None if until is None else clock.from_ms(until))
