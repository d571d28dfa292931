"""Writing and reading the ledger: one append-only record per thing that happened.

Each run's records form a hash chain. A record carries `chain_index` (0, 1, 2, ... in the order
the records were written), `prev_hash` (the hash of the run's record before it; "" for the first)
and `hash` = SHA-256 of `prev_hash` followed by the record's content digest, the SHA-256 of the
canonical JSON of its content (`canonical`). Editing, removing or reordering a record breaks the
chain at that record, which `verify` names (`manage.py ledger verify`).

Writers of one run's chain take turns on the run row's lock, so "previous" is the record written
last, whoever wrote it: the lease holder's steps, the decide/withdraw/cancel services. On
PostgreSQL a BEFORE INSERT trigger (migration 0005) links each record in the statement that
inserts it: it locks the run row (FOR NO KEY UPDATE, held to the end of the transaction), reads
the last record (a trigger's query sees what committed before the lock was granted) and turns the
content digest the insert carries in `hash` into the chained hash. The engine's one-statement
checkpoint thus writes its hash with no extra round trip. On SQLite the model's `save` links the
record in Python, in the writer's transaction; SQLite has one writer at a time.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction

from runs.engine import clock, instances
from runs.ledger_chain import CONTENT_FIELDS, canonical, content_digest, content_of, digest_and_body, link, prepare
from runs.models import LedgerRecord, Run

__all__ = ["CONTENT_FIELDS", "Break", "Verified", "append", "build", "canonical", "check_chain", "content_digest",
           "content_of", "digest_and_body", "link", "prepare", "record_id", "records_of", "verify"]

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
    return instances.new(
        LedgerRecord,
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


# ---- the hash chain: its rules are in runs.ledger_chain (the model's save uses them) ------------

@dataclass(frozen=True)
class Break:
    """The first record of a run whose chain does not hold, and why."""

    run_id: str
    record_id: str
    chain_index: int
    reason: str

    def __str__(self) -> str:
        return f"run {self.run_id}: record {self.record_id} (#{self.chain_index}) {self.reason}"


@dataclass(frozen=True)
class Verified:
    runs: int
    records: int
    breaks: list[Break]
    # Each chain's last record, (run_id, chain_index, hash), in run order: what to keep elsewhere
    # to show later that no record was removed from a chain's end.
    heads: list[tuple[str, int, str]] = field(default_factory=list)


_VERIFY_FIELDS = (*CONTENT_FIELDS, "chain_index", "prev_hash", "hash")


def check_chain(records: Iterable[dict[str, Any]]) -> Break | None:
    """The first break in one run's records given in chain order, or None when the chain holds."""
    expected_prev = ""
    for position, record in enumerate(records):
        where = (record["run_id"], record["record_id"], record["chain_index"])
        if not record["hash"]:
            return Break(*where, "has no hash: it was written without the chain, or its hash was removed")
        if record["chain_index"] != position:
            missing = "is missing" if record["chain_index"] > position else "appears twice"
            return Break(*where, f"does not follow the previous record: record #{position} {missing}")
        if record["prev_hash"] != expected_prev:
            return Break(*where, "does not link to the previous record (its prev_hash differs: a record before it "
                                 "was changed or removed)")
        if record["hash"] != link(record["prev_hash"], content_digest(record)):
            return Break(*where, "was changed after it was written (its content does not match its hash)")
        expected_prev = record["hash"]
    return None


def _chains(run_id: str | None, using: str) -> Iterator[list[dict[str, Any]]]:
    records = LedgerRecord.objects.using(using).order_by("run_id", "chain_index", "id")
    if run_id is not None:
        records = records.filter(run_id=run_id)
    current: list[dict[str, Any]] = []
    for record in records.values(*_VERIFY_FIELDS).iterator(chunk_size=2000):
        if current and current[0]["run_id"] != record["run_id"]:
            yield current
            current = []
        current.append(record)
    if current:
        yield current


def verify(run_id: str | None = None, *, using: str = "default") -> Verified:
    """Check every run's chain (or one run's): how many runs and records, and each run's first break."""
    runs = count = 0
    breaks: list[Break] = []
    heads: list[tuple[str, int, str]] = []
    for chain in _chains(run_id, using):
        runs += 1
        count += len(chain)
        broken = check_chain(chain)
        if broken is not None:
            breaks.append(broken)
        heads.append((chain[-1]["run_id"], chain[-1]["chain_index"], chain[-1]["hash"]))
    return Verified(runs=runs, records=count, breaks=breaks, heads=heads)


def records_of(run_id: str) -> list[dict[str, Any]]:
    return [r.as_dict() for r in LedgerRecord.objects.filter(run_id=run_id).order_by("seq", "id")]
