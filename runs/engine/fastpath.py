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
from datetime import datetime

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
RETURNING id
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
RETURNING id
"""


def available() -> bool:
    return transitions.one_statement()


def _json(value: object) -> str | None:
    return None if value is None else json.dumps(value)


def _step_params(step: Step) -> list[object]:
    return [step.seq, step.kind, step.name, _json(step.output), _json(step.error), _json(step.decision), step.attempt,
            step.next_seq, step.created_at]


def write_step(*, step: Step, record: LedgerRecord, worker_id: str, lease_until: datetime, now: datetime,
               renew: bool) -> bool:
    """Check (or renew) the lease and write the step and its record together; False when the
    lease is no longer this worker's, or the run no longer running."""
    params = [
        *transitions.lease_params(run_id=step.run_id, worker_id=worker_id, now=now, lease_until=lease_until,
                                  renew=renew),
        *_step_params(step),
        *transitions.record_params(record),
    ]
    return transitions.execute_returning(_RENEWING if renew else _CHECKING, params)


def write_step_with_end(*, step: Step, record: LedgerRecord, worker_id: str, now: datetime,
                        status: RunStatus, result: object, error: object, end: LedgerRecord) -> bool:
    """End the run held by this worker, writing its last step and that step's record before the
    end's record, in one statement; False when this worker no longer holds a running run."""
    params = [
        *transitions.end_params(run_id=step.run_id, worker_id=worker_id, status=status, result=result, error=error,
                                now=now),
        *_step_params(step),
        *transitions.record_params(record),
        *transitions.record_params(end),
    ]
    return transitions.execute_returning(_ENDING, params)
