"""The worker processes' connection checks (wakeups/checks.py): a task that follows another within
a second skips its connection's `SELECT 1`; one after a quiet spell, or after a database error, is
checked as django-q2 and CONN_HEALTH_CHECKS would."""
from __future__ import annotations

import pytest
from django import db
from django.db import connection
from django_q.signals import post_execute_in_worker, pre_execute

from wakeups import checks

KEPT = connection.vendor == "postgresql" and bool(connection.settings_dict.get("CONN_HEALTH_CHECKS"))
pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(not KEPT, reason="the site's PostgreSQL connections are kept and checked")]


@pytest.fixture
def asked(monkeypatch):
    checks.install()
    made: list[bool] = []
    usable = connection.is_usable
    def counted() -> bool:
        made.append(True)
        return usable()

    monkeypatch.setattr(connection, "is_usable", counted)
    yield made
    post_execute_in_worker.disconnect(dispatch_uid="sanoma-task-ended")
    pre_execute.disconnect(dispatch_uid="sanoma-task-starts")


def _task() -> None:
    """What django-q2's worker does around a task: old connections closed, pre_execute, the task's
    queries, post_execute_in_worker."""
    db.close_old_connections()
    pre_execute.send(sender="django_q", func=None, task={})
    with connection.cursor() as cursor:
        cursor.execute("SELECT 2")
    post_execute_in_worker.send(sender="django_q", func=None, task={})


def test_a_task_right_after_another_skips_the_check_one_after_a_quiet_spell_does_not(asked, monkeypatch):
    _task()
    asked.clear()
    for _ in range(3):
        _task()
    assert asked == []
    monkeypatch.setattr(checks, "_ended_at", checks._ended_at - checks.RECENT - 1)  # a quiet spell
    _task()
    assert asked == [True]


def test_a_connection_that_had_an_error_is_checked(asked):
    _task()
    asked.clear()
    connection.errors_occurred = True
    db.close_old_connections()  # a connection with errors is checked (and kept when it answers)
    pre_execute.send(sender="django_q", func=None, task={})
    with connection.cursor() as cursor:
        cursor.execute("SELECT 2")
    assert asked == [True]
