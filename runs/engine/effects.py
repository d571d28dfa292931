"""Recording a call whose vendor acted: at once, or behind the workflow's own code.

A call the vendor carried out must be recorded before anything else happens to its run: its
checkpoint (step and `op.called` record) is written with retries (`record`), and if it cannot be,
the call fails with `ledger_write_failed` and the run takes no further call, so a workflow that
catches the failure cannot repeat the effect unrecorded.

Write-behind. The checkpoint of a call that ends the one-statement way (a step and its one
record; not a sandbox run's, nor a money call's) is not written when the call returns: it waits
in memory (`Behind`, on the segment) while the workflow's own code runs, and is written before the
engine does anything else for the run: another call, any built-in of `ctx`, a suspension or
hand-back. When the workflow returns or raises instead, it is written together with the run's end
in one transaction (one statement on PostgreSQL, `runs.engine.transitions.end_with_step`), so a
run's last call and its end cost one commit. Meanwhile the heartbeat keeps the lease, as it does
while a vendor answers. The order of the run's steps and records is the same as when written at
once: nothing else is written in between.

A crash before the write is a crash right after the call: nothing of the call is recorded, and
the run's next holder replays it under the same idempotency key (or settles it in doubt). When
the write fails for good (after the same retries), the failure is the call's, not that of what
came after it: the segment raises `Rewind`, the body runs again from the top of its generation
in the same advance (every step before is recorded; a workflow is deterministic, which replay
already relies on), and at that call's step the call raises `ledger_write_failed`, where the
workflow can catch it as it could before; every later call is refused. A lease lost meanwhile
stops the advance as any write under a lost lease does.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from connectors.errors import ErrorCode, SanomaError
from connectors.operations import Operation
from runs.engine import clock, reconnect
from runs.engine.stops import Cancelled, LeaseLost

if TYPE_CHECKING:
    from runs.engine.segment import Checkpoint, Segment

log = logging.getLogger("sanoma.engine")
T = TypeVar("T")

LEDGER_RETRY_DELAYS = (0.05, 0.2, 0.8)


@dataclass
class Behind:
    """A call's checkpoint not yet written: the vendor acted, the workflow's code runs on."""

    op: Operation
    checkpoint: Checkpoint
    call_seconds: float
    heartbeat: int  # the heartbeat's token: the lease is kept meanwhile


class Unrecorded(Exception):
    """The checkpoint of a call the vendor carried out could not be written, retries spent."""

    def __init__(self, error: SanomaError) -> None:
        super().__init__(str(error))
        self.error = error


def record(segment: Segment, op: Operation, checkpoint: Checkpoint, *, call_seconds: float,
           first: Callable[[], T | None] | None = None) -> T | None:
    """Write the checkpoint of a call the vendor carried out, trying again before giving up.

    A dropped connection is ridden out by the segment's commit for as long as this worker's
    lease lasts (counting the renewals of the heartbeat while the vendor answered). An error the
    database answered is tried again after 50, 200 and 800 ms. Past either, `Unrecorded` (its
    `ledger_write_failed` error). `first`, when given, is the first try instead (the checkpoint
    with the run's end): its result when it wrote, None when it could not take the run's lease
    (the checkpoint is then written on its own at once, which tells a cancel from a lost lease)."""
    delays = iter(LEDGER_RETRY_DELAYS)
    while True:
        failure: BaseException
        try:
            if first is not None:
                attempt, first = first, None
                written = attempt()
                if written is not None:
                    return written
            segment.commit(checkpoint, call_seconds=call_seconds)
            return None
        except (LeaseLost, Cancelled):
            raise
        except reconnect.Unreachable as gone:
            failure, delay = gone, None
        except Exception as err:
            # A record that cannot be serialised fails the same way every time.
            failure, delay = err, None if isinstance(err, (TypeError, ValueError)) else next(delays, None)
        if delay is None:
            error = SanomaError(f"{op.id} succeeded, but the ledger could not record it: {failure}",
                                code=ErrorCode.LEDGER_WRITE_FAILED, data={"op": op.id})
            error.__cause__ = failure
            raise Unrecorded(error) from failure
        log.warning("recording %s of run %s failed (%s); trying again", op.id, segment.run.id,
                    str(failure).strip().split("\n")[0], extra={"run_id": segment.run.id})
        clock.sleep(delay)
