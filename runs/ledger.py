"""Writing and reading the ledger: one append-only record per thing that happened."""
from __future__ import annotations

import logging
from typing import Any

from django.db import IntegrityError, transaction

from runs.engine import clock
from runs.models import LedgerRecord, Run

log = logging.getLogger("sanoma.ledger")

# Fields compared when a record id is written twice: a difference means a replay diverged.
_COMPARED = ("kind", "input", "decision", "error", "output")


def record_id(run_id: str, kind: str, key: int | str) -> str:
    return f"{run_id}:{kind}:{key}"


def mask_opaque(values: Any, opaque: tuple[str, ...]) -> Any:
    """Opaque fields are the driver's own data: recorded by name only."""
    if not opaque or not isinstance(values, dict):
        return values
    return {k: (f"<{k}>" if k in opaque else v) for k, v in values.items()}


def build(
    run: Run,
    *,
    kind: str,
    seq: int,
    body: dict[str, Any],
    key: int | str | None = None,
    group: dict[str, Any] | None = None,
    app: str,
    actor: str | None = None,
) -> LedgerRecord:
    """A record about `run`. Its actor is who acted: the run's starter for what the run does, the
    decider for a decision or a refused one, whoever withdrew an approval."""
    return LedgerRecord(
        record_id=record_id(run.id, kind, seq if key is None else key),
        run_id=run.id,
        seq=seq,
        app=app,
        at=clock.now_ms(),
        actor=run.started_by if actor is None else actor,
        workflow=run.workflow,
        kind=kind,
        body=body,
        group=group,
    )


def append(record: LedgerRecord) -> LedgerRecord:
    """Add the record unless one with its id exists; the first write wins, a differing second is logged.

    Runs inside the caller's transaction, in a savepoint so a duplicate does not abort it.
    """
    try:
        with transaction.atomic(savepoint=True):
            record.save(force_insert=True)
        return record
    except IntegrityError:
        existing = LedgerRecord.objects.get(record_id=record.record_id)
        first = {"kind": existing.kind, **existing.body}
        second = {"kind": record.kind, **record.body}
        if any(first.get(f) != second.get(f) for f in _COMPARED):
            log.warning("ledger record %s written again with other content; the first is kept. first=%s second=%s",
                        record.record_id, first, second)
        return existing


def records_of(run_id: str) -> list[dict[str, Any]]:
    return [r.as_dict() for r in LedgerRecord.objects.filter(run_id=run_id).order_by("seq", "id")]
