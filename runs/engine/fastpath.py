"""A step's checkpoint in one statement on PostgreSQL.

The lease renewal, the step row and its ledger record go to the database as one statement (a
data-modifying CTE): one round trip and one commit instead of five round trips. When the lease
check matches no row nothing is written, and the caller takes the general path, which tells a
cancelled run from a lost lease. Measured in `bench/engine.py`.
"""
from __future__ import annotations

import json
from datetime import datetime

from django.db import connection, transaction

from runs.models import LedgerRecord, RunStatus, Step

_RENEW = """
    UPDATE runs_run SET lease_until = %s, updated_at = %s
    WHERE id = %s AND lease_owner = %s AND status = %s
    RETURNING id
"""
# While the lease is fresh it is only checked: no write to the run row (and its indexes) per step.
# A lease that has not expired cannot be claimed by another worker, so the check is enough.
_CHECK = """
    SELECT id FROM runs_run
    WHERE lease_until > %s AND id = %s AND lease_owner = %s AND status = %s
"""
_SQL = """
WITH lease AS ({lease}), step AS (
    INSERT INTO runs_step (run_id, seq, kind, name, output, error, decision, attempt, next_seq, created_at)
    SELECT id, %s, %s, %s, %s::jsonb, %s::jsonb, %s::jsonb, %s, %s, %s FROM lease
    RETURNING run_id
)
INSERT INTO runs_ledgerrecord (record_id, run_id, seq, v, app, at, actor, workflow, kind, body, "group")
SELECT %s, run_id, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb FROM step
RETURNING id
"""


def available() -> bool:
    return connection.vendor == "postgresql"


def _json(value: object) -> str | None:
    return None if value is None else json.dumps(value)


_RENEWING = _SQL.format(lease=_RENEW)
_CHECKING = _SQL.format(lease=_CHECK)


def write_step(*, step: Step, record: LedgerRecord, worker_id: str, lease_until: datetime, now: datetime,
               renew: bool) -> bool:
    """Check (or renew) the lease and write the step and its record together; False when the
    lease is no longer this worker's, or the run no longer running."""
    lease = [lease_until, now] if renew else [now]
    params = [
        *lease, step.run_id, worker_id, RunStatus.RUNNING,
        step.seq, step.kind, step.name, _json(step.output), _json(step.error), _json(step.decision), step.attempt,
        step.next_seq, step.created_at,
        record.record_id, record.seq, record.v, record.app, record.at, record.actor, record.workflow, record.kind,
        _json(record.body), _json(record.group),
    ]
    return _execute(_RENEWING if renew else _CHECKING, params)


_END_SQL = """
WITH ended AS (
    UPDATE runs_run SET status = %s, result = %s::jsonb, error = %s::jsonb, lease_owner = '', lease_until = NULL,
        updated_at = %s, ended_at = %s
    WHERE id = %s AND lease_owner = %s AND status = %s
    RETURNING id
)
INSERT INTO runs_ledgerrecord (record_id, run_id, seq, v, app, at, actor, workflow, kind, body, "group")
SELECT %s, id, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb FROM ended
RETURNING id
"""


def end_run(*, run_id: str, worker_id: str, status: str, result: object, error: object, now: datetime,
            record: LedgerRecord) -> bool:
    """End the run and write its closing record together; False when this worker no longer holds it."""
    params = [
        status, _json(result), _json(error), now, now, run_id, worker_id, RunStatus.RUNNING,
        record.record_id, record.seq, record.v, record.app, record.at, record.actor, record.workflow, record.kind,
        _json(record.body), _json(record.group),
    ]
    return _execute(_END_SQL, params)


def _execute(sql: str, params: list) -> bool:
    # One statement is atomic on its own: in autocommit it is one round trip. Inside a caller's
    # transaction a savepoint keeps a refused insert from aborting the caller's work.
    if connection.in_atomic_block:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone() is not None
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone() is not None
