"""(t)'s reading of PostgreSQL's statement log: each transaction counted once, named by what it does;
other databases' sessions, the bench's own and a session's setup left out."""
from __future__ import annotations

from pathlib import Path

import pytest

from engine_bench import machinery

LOG = """\
2026-12-05 00:16:53.060 UTC [11] postgres@bench LOG:  statement: SELECT 1
2026-12-05 00:16:53.061 UTC [11] postgres@bench LOG:  statement: BEGIN
2026-12-05 00:16:53.061 UTC [12] postgres@other LOG:  statement: DELETE FROM django_q_ormq WHERE id IN (1)
2026-12-05 00:16:53.061 UTC [11] postgres@bench LOG:  statement:
\tUPDATE runs_run SET status = 'running', lease_owner = 'vm:1', lease_until = now()
\tWHERE id = 'r-1'
2026-12-05 00:16:53.062 UTC [11] postgres@bench LOG:  statement: SELECT seq FROM runs_step WHERE run_id = 'r-1'
2026-12-05 00:16:53.062 UTC [11] postgres@bench LOG:  statement: COMMIT
2026-12-05 00:16:53.063 UTC [13] postgres@bench LOG:  statement:
\tWITH lease AS (
\t    SELECT id FROM runs_run
\t)
2026-12-05 00:16:53.064 UTC [14] postgres@bench LOG:  statement: SET TIME ZONE 'UTC'
2026-12-05 00:16:53.064 UTC [14] postgres@bench LOG:  statement: DELETE FROM django_q_ormq WHERE id IN (
\tSELECT id FROM django_q_ormq) RETURNING id, payload
2026-12-05 00:16:53.065 UTC [99] postgres@bench LOG:  statement: SELECT xact_commit FROM pg_stat_database
2026-12-05 00:16:53.066 UTC [14] postgres@bench ERROR:  canceling statement due to statement timeout
"""


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "postgresql.log"
    path.write_text("2026-12-05 00:00:00.000 UTC [11] postgres@bench LOG:  statement: SELECT 'before'\n")
    monkeypatch.setattr(machinery, "SERVER_LOG", path)
    return path


def test_each_transaction_is_counted_once_and_named_by_what_it_does(log: Path) -> None:
    since = log.stat().st_size
    with open(log, "a") as out:
        out.write(LOG)
    kinds = machinery.logged_transactions("bench", since, own_pid=99)
    assert kinds == {"connection health check (SELECT 1)": 1, "advance: claim (and the steps read)": 1,
                     "advance: step (one statement)": 1, "broker: take a task": 1}


def test_without_a_readable_log_nothing_is_named() -> None:
    assert machinery.logged_transactions("bench", None, own_pid=1) == {}
