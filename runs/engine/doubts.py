"""Calls in doubt: an attempt whose effect may have happened, and how it is settled.

A call of an operation that is neither idempotent nor takes an idempotency key records its intent
(`op.intent`, with the attempt's deadline) before it is sent. A worker that dies before recording
the reply leaves the intent behind: the next advance finds the call in doubt instead of sending it
again. An operator settles it, or the connector's reconcile read does (`op.resolved`), once the
attempt can no longer land at the vendor.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from connectors.drivers import CallContext
from connectors.operations import Operation
from runs.engine import calling, clock, secrets
from runs.engine.segment import Checkpoint, Segment
from runs.engine.stops import Suspend
from runs.models import LedgerKind, LedgerRecord

log = logging.getLogger("sanoma.engine")

# Workers' clocks may differ a little: a reconcile waits this much past an in-doubt attempt's
# recorded deadline (taken on the clock of the worker that sent it) before asking the vendor.
CLOCK_MARGIN_MS = 1000


class CallHistory:
    """What earlier advances recorded of the calls not yet settled: failed attempts (seq ->
    attempts made, next try at in epoch ms), calls in doubt (seq -> the attempt that may have
    taken effect, and how it was settled), and when each was sent (seq -> epoch ms, and the
    deadline its intent recorded: None in a record written before intents carried one)."""

    def __init__(self, records: Sequence[LedgerRecord] = ()) -> None:
        self.attempts: dict[int, tuple[int, int | None]] = {}
        self.doubts: dict[int, tuple[int, dict[str, Any] | None]] = {}
        self.sent: dict[int, tuple[int, int | None]] = {}
        for record in sorted(records, key=lambda r: (r.seq, r.body.get("attempt", 0), r.kind != LedgerKind.OP_INTENT)):
            made = record.body.get("attempt", 0)
            if record.kind == LedgerKind.OP_ATTEMPT_FAILED:
                self.attempts[record.seq] = (made, record.body.get("next_at"))
            elif record.kind == LedgerKind.OP_INTENT:
                self.doubts[record.seq] = (made, None)
                self.sent[record.seq] = (record.at, record.body.get("deadline"))
            elif record.kind == LedgerKind.OP_RESOLVED and self.doubts.get(record.seq, (None,))[0] == made:
                self.doubts[record.seq] = (made, {k: record.body.get(k) for k in ("happened", "output", "by")})

    def lands_until(self, seq: int, timeout: float) -> int:
        """Until when (epoch ms) the attempt in doubt at `seq` may still land at the vendor: the
        deadline its intent recorded (an older intent: its time plus the call's timeout), plus a
        margin for the clocks of two workers."""
        sent_at, deadline = self.sent[seq]
        if deadline is None:
            deadline = sent_at + int(timeout * 1000)
        return deadline + CLOCK_MARGIN_MS


def resolution(segment: Segment, history: CallHistory, op: Operation, seq: int, parsed: BaseModel,
               timeout: float) -> dict[str, Any]:
    """How the call in doubt at `seq` was settled (`happened`, `output`, `by`), asking the
    reconcile read once the attempt can no longer land; unsettled, the run waits `in_doubt`.

    The reconcile read is asked only once the attempt in doubt can no longer land: its worker
    may be frozen (past its lease, which fences its database writes but not its vendor call)
    with the call still in flight, and a read before the call's deadline could say "did not
    happen" just before it does. Until then the run waits `in_doubt`, woken at the deadline."""
    attempt, settled = history.doubts[seq]
    if settled is None and op.reconcile is not None:
        lands_until = history.lands_until(seq, timeout)
        if clock.now_ms() < lands_until:
            raise Suspend("in_doubt", wake_at=clock.from_ms(lands_until))
        settled = reconcile(segment, history, op, seq, attempt, parsed, timeout)
    if settled is None:
        raise Suspend("in_doubt")
    return settled


def reconcile(segment: Segment, history: CallHistory, op: Operation, seq: int, attempt: int, parsed: BaseModel,
              timeout: float) -> dict[str, Any] | None:
    """Ask the vendor whether the in-doubt call took effect (the connector's reconcile read);
    its answer is recorded (`op.resolved` by `reconcile`). None when it cannot say."""
    run = segment.run
    read = segment.config.ops.get(op.reconcile or "")
    reader = segment.config.drivers.get(read.id) if read is not None else None
    if read is None or reader is None:
        return None
    context = CallContext(idempotency_key=f"{run.id}:{seq}", run_id=run.id, op_id=read.id,
                          attempt=attempt, by=run.started_by, secrets=secrets.for_connector(read.vendor),
                          timeout=timeout, deadline=time.time() + timeout)
    try:
        with segment.heartbeat():
            answer = read.output.model_validate(calling.invoke(reader, read, parsed, context, timeout))
        said = answer.model_dump(mode="json")
        happened = bool(said["happened"])
        output = op.output.model_validate(said["output"]).model_dump(mode="json") if happened else None
    except Exception as err:
        log.warning("run %s: reconciling %s failed (%s); it waits for an operator", run.id, op.id, err,
                    extra={"run_id": run.id})
        return None
    settled = {"happened": happened, "output": output, "by": "reconcile"}
    body = {"op": op.id, "attempt": attempt, **settled}
    segment.commit(Checkpoint(records=[segment.record(LedgerKind.OP_RESOLVED, seq, body, key=f"{seq}:{attempt}")]))
    history.doubts[seq] = (attempt, settled)
    return settled
