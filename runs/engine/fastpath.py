"""A step's checkpoint in one statement on PostgreSQL.

The lease check (or renewal), the step row and its ledger record go to the database as one
statement (a data-modifying CTE): one round trip and one commit instead of five. The record's
hash-chain link is made by the ledger's insert trigger inside that statement (`runs.ledger`). When the lease
check matches no row nothing is written, and the caller takes the general path, which tells a
cancelled run from a lost lease. Measured in `bench/engine.py`. The lease part is owned by
`runs.engine.transitions`, like every other change to the run row.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime

from django.db import IntegrityError

from runs.engine import transitions
from runs.models import LedgerRecord, RunStatus, Step

_SQL = """
WITH lease AS ({lease}), step AS (
    INSERT INTO runs_step (run_id, seq, kind, name, output, error, decision, attempt, next_seq, created_at)
    SELECT id, %s, %s, %s, %s::jsonb, %s::jsonb, %s::jsonb, %s, %s, %s FROM lease
    RETURNING run_id
)
INSERT INTO runs_ledgerrecord (record_id, run_id, seq, v, app, at, actor, workflow, kind, body, "group",
    chain_index, prev_hash, hash)
SELECT %s, run_id, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb, %s, %s, %s FROM step
RETURNING chain_index, hash
"""
_RENEWING = _SQL.format(lease=transitions.LEASE_RENEW_SQL)
_CHECKING = _SQL.format(lease=transitions.LEASE_CHECK_SQL)

# A run's last call and its end (`runs.engine.effects`): the end's update checks the lease; the
# step, the call's record and the end's record follow it, each insert reading the one before, so
# the chain's trigger links the call's record first and the end's after it (a row-level trigger's
# query sees the rows its statement inserted before).
_ENDING = f"""
WITH lease AS ({transitions.END_CTE_SQL}), step AS (
    INSERT INTO runs_step (run_id, seq, kind, name, output, error, decision, attempt, next_seq, created_at)
    SELECT id, %s, %s, %s, %s::jsonb, %s::jsonb, %s::jsonb, %s, %s, %s FROM lease
    RETURNING run_id
), called AS (
    INSERT INTO runs_ledgerrecord (record_id, run_id, seq, v, app, at, actor, workflow, kind, body, "group",
        chain_index, prev_hash, hash)
    SELECT %s, run_id, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb, %s, %s, %s FROM step
    RETURNING run_id
)
INSERT INTO runs_ledgerrecord (record_id, run_id, seq, v, app, at, actor, workflow, kind, body, "group",
    chain_index, prev_hash, hash)
SELECT %s, run_id, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb, %s, %s, %s FROM called
RETURNING chain_index, hash
"""


def available() -> bool:
    return transitions.one_statement()


def _json(value: object) -> str | None:
    return None if value is None else json.dumps(value)


def _step_params(step: Step) -> list[object]:
    return [step.seq, step.kind, step.name, _json(step.output), _json(step.error), _json(step.decision), step.attempt,
            step.next_seq, step.created_at]


# A run's last record as (chain_index, hash): a checkpoint's record is linked after it.
Last = tuple[int, str]


def write_step(*, step: Step, record: LedgerRecord, worker_id: str, lease_until: datetime, now: datetime,
               renew: bool, after: Last | None = None) -> Last | None:
    """Check (or renew) the lease and write the step and its record together; the record's link
    (its run's last record now), or None when the lease is no longer this worker's, or the run no
    longer running. With `after`, the record is linked here after it (no trigger's lock and read);
    when another writer has linked a record after it since, the write is made again for the
    trigger to link."""
    def params(after: Last | None) -> list[object]:
        return [
            *transitions.lease_params(run_id=step.run_id, worker_id=worker_id, now=now, lease_until=lease_until,
                                      renew=renew),
            *_step_params(step),
            *transitions.record_params(record, after),
        ]

    return _linked(_RENEWING if renew else _CHECKING, params, after)


def write_step_with_end(*, step: Step, record: LedgerRecord, worker_id: str, now: datetime,
                        status: RunStatus, result: object, error: object, end: LedgerRecord,
                        after: Last | None = None) -> Last | None:
    """End the run held by this worker, writing its last step and that step's record before the
    end's record, in one statement; the end record's link, or None when this worker no longer
    holds a running run. `after` as for `write_step`."""
    def params(after: Last | None) -> list[object]:
        called = transitions.record_params(record, after)
        return [
            *transitions.end_params(run_id=step.run_id, worker_id=worker_id, status=status, result=result,
                                    error=error, now=now),
            *_step_params(step),
            *called,
            *transitions.record_params(end, None if after is None else (record.chain_index, record.hash)),
        ]

    return _linked(_ENDING, params, after)


def _linked(sql: str, params: Callable[[Last | None], list[object]], after: Last | None) -> Last | None:
    if after is not None:
        try:
            row = transitions.execute_first_row(sql, params(after))
        except IntegrityError as err:
            if not chain_taken(err):
                raise
            # Another writer (a decision, a cancel) linked a record after `after`: the trigger links.
            row = transitions.execute_first_row(sql, params(None))
    else:
        row = transitions.execute_first_row(sql, params(None))
    if row is None:
        return None
    index, hash = row
    assert index is not None and hash is not None
    return int(index), hash


def chain_taken(err: IntegrityError) -> bool:
    """Whether `err` is the ledger's refusal of a second record at one place of a run's chain."""
    diag = getattr(err.__cause__, "diag", None)
    return getattr(diag, "constraint_name", None) == "ledger_run_chain"
