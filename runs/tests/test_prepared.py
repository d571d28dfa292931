"""A step's checkpoint statement is prepared once per database connection on PostgreSQL, and
planned once: a run of many steps does not make PostgreSQL plan each checkpoint again
(`runs.engine.bound`). With `SANOMA_PREPARED_STATEMENTS` off nothing is prepared and runs are
the same."""
from __future__ import annotations

from typing import Any

import pytest
from django.db import DatabaseError, connection
from django.test import override_settings
from django_q.models import OrmQ

from runs import ledger
from runs.engine.advance import Advanced, advance
from runs.models import Run, RunStatus, Step
from runs.tests.fixtures import CALLS

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's"),
]




@pytest.fixture
def engine(engine_for):
    made = engine_for(CALLS)
    yield made
    OrmQ.objects.all().delete()


def _prepared() -> list[tuple[str, str, int, int]]:
    """The engine's statements the server holds for this connection: name, text, plans."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT name, statement, generic_plans, custom_plans FROM pg_prepared_statements "
                       "WHERE name LIKE 'sanoma\\_%' ORDER BY name")
        return list(cursor.fetchall())


def _verifies(run_id: str) -> None:
    checked = ledger.verify(run_id)
    assert checked.records and not checked.breaks, checked


def _finished(engine: Any, n: int, run_id: str) -> Run:
    run = engine.start("calls", {"n": n}, run_id=run_id)
    assert advance(run.id, worker_id="w-1", config=engine.config) is Advanced.FINISHED
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED and run.result == {"done": n}
    return run


def test_a_checkpoint_is_prepared_once_and_planned_once_for_many_steps(engine):
    connection.close()  # a fresh server session: nothing of the engine's prepared yet
    _finished(engine, 12, "twelve-steps")
    _finished(engine, 12, "twelve-more")
    held = _prepared()
    checkpoints = [row for row in held if "INSERT INTO runs_step" in row[1] and "runs_ledgerrecord" in row[1]]
    # The plain checkpoint (lease checked), and the last call's with the run's end.
    assert len(checkpoints) == 2, held
    plain = max(checkpoints, key=lambda row: row[2] + row[3])
    # 22 executions of one prepared statement (11 calls a run before the one with the end); the
    # server planned it a few times, then kept one generic plan for the rest.
    assert plain[2] + plain[3] == 22
    assert plain[2] >= 15, f"planned for each execution: {plain}"
    # The two runs' starts and claims, and the read of their steps, each one prepared statement.
    for part in ("INSERT INTO runs_run", "UPDATE runs_run SET status = $1, lease_owner", "FROM runs_step WHERE"):
        found = [row for row in held if part in row[1]]
        assert len(found) == 1 and found[0][2] + found[0][3] == 2, (part, held)
    _verifies("twelve-more")


def test_after_a_reconnect_the_statements_are_prepared_again(engine):
    _finished(engine, 3, "before")
    connection.close()
    assert _prepared() == []  # a new server session holds none
    run = _finished(engine, 3, "after")
    assert Step.objects.filter(run=run).count() == 3
    assert _prepared(), "the new connection's statements were not prepared"


def test_with_prepared_statements_off_nothing_is_prepared_and_runs_are_the_same(engine):
    connection.close()
    with override_settings(SANOMA_PREPARED_STATEMENTS=False):
        run = _finished(engine, 5, "unprepared")
    assert _prepared() == []
    assert Step.objects.filter(run=run).count() == 5
    _verifies("unprepared")


def test_a_statement_the_server_lost_is_prepared_again_on_the_next_step(engine, caplog):
    """A pooler that hands the connection another server session loses the statements: the
    statement that finds itself gone (here the claim) fails with the server's error and changes
    nothing, the log says which setting to turn off, and the next advance prepares them again."""
    _finished(engine, 2, "warm")
    run = engine.start("calls", {"n": 3}, run_id="lost")
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")  # as a new server session behind a pooler would be
    with caplog.at_level("ERROR", logger="sanoma.engine"):
        try:
            first: Advanced | None = advance(run.id, worker_id="w-1", config=engine.config)
        except DatabaseError as err:
            assert "does not exist" in str(err)
            first = None
    assert "SANOMA_PREPARED_STATEMENTS=false" in caplog.text
    run.refresh_from_db()
    if first is not Advanced.FINISHED:  # the lost statement's step is taken again by the next advance
        run.lease_until = None
        run.save(update_fields=["lease_until"])
        assert advance(run.id, worker_id="w-2", config=engine.config) is Advanced.FINISHED
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED and run.result == {"done": 3}
    assert Step.objects.filter(run=run).count() == 3
    _verifies("lost")


def test_values_go_to_the_server_as_they_are_and_come_back_as_django_reads_them():
    """Text with quotes, backslashes and commas, in a list (the claim's versions), an aware
    datetime and JSON come back as Django's own cursor gives them."""
    from datetime import UTC, datetime

    from runs.engine import bound

    texts = ['a"b', "c\\d", "e,f", "{g}", ""]
    moment = datetime(2026, 12, 5, 6, 30, 1, 123456, tzinfo=UTC)
    sql = "SELECT %s::text[], %s::timestamptz, %s::jsonb, %s::int8, %s::bool"
    params: list[Any] = [texts, moment, '{"k": [1, 2.5]}', 7, True]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        by_django = cursor.fetchall()
    assert bound.rows(sql, params) == by_django == [(texts, moment, '{"k": [1, 2.5]}', 7, True)]


def test_named_placeholders_go_in_their_order_a_name_used_twice_sent_twice():
    from runs.engine import bound

    sql = "SELECT %(b)s::int + %(a)s::int, %(b)s::text"
    assert bound.positional(sql, {"a": 1, "b": 2, "unused": 3}) == ("SELECT %s::int + %s::int, %s::text", [2, 1, 2])
    assert bound.first_row(*bound.positional(sql, {"a": 1, "b": 2})) == ("3", "2")
