"""The deadline sweep (wakeups/sweep.py): what one pass wakes, takes over and re-sends, the next
deadline it reads for the worker's timer, and what it costs (one transaction when idle, on
PostgreSQL). Real commits."""
from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django_q.models import OrmQ

from runs.engine import clock
from runs.models import Run, RunStatus
from runs.tests.transaction_count import counted
from wakeups import sweep as sweep_module
from wakeups.sweep import STALE_QUEUED, sweep

pytestmark = pytest.mark.django_db(transaction=True)
VERSION = "w@1"


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    sweep_module._next_resend = 0.0
    yield
    clock.reset()
    OrmQ.objects.all().delete()


def _run(run_id: str, status: str, **fields: Any) -> Run:
    now = clock.now()
    return Run.objects.create(id=run_id, workflow="w", app_version=VERSION, input={}, started_by="alice",
                              status=status, created_at=now, updated_at=now, queued_at=now, **fields)


def test_a_pass_wakes_the_due_takes_over_the_expired_and_reads_the_next_deadline():
    now = clock.now()
    _run("due", RunStatus.WAITING, wake_at=now - timedelta(seconds=1), waiting_for="sleep")
    _run("later", RunStatus.WAITING, wake_at=now + timedelta(seconds=30), waiting_for="sleep")
    _run("abandoned", RunStatus.RUNNING, lease_owner="gone:1", lease_until=now - timedelta(seconds=1))
    _run("held", RunStatus.RUNNING, lease_owner="up:1", lease_until=now + timedelta(seconds=30))
    result = sweep(versions=[VERSION], cluster="sanoma")
    assert (result.woken, result.taken_over, result.resent) == (1, 1, 0)
    assert result.next_wake == Run.objects.get(pk="later").wake_at
    statuses = dict(Run.objects.values_list("pk", "status"))
    assert statuses == {"due": "queued", "later": "waiting", "abandoned": "queued", "held": "running"}
    assert OrmQ.objects.count() == 2  # each woken run's task, enqueued with its wake


def test_a_full_batch_of_due_sleepers_says_the_next_deadline_is_now(monkeypatch):
    monkeypatch.setattr(sweep_module, "BATCH", 2)
    now = clock.now()
    for i in range(3):
        _run(f"due-{i}", RunStatus.WAITING, wake_at=now - timedelta(seconds=3 - i), waiting_for="sleep")
    result = sweep(versions=[VERSION], cluster="sanoma")
    assert result.woken == 2
    assert result.next_wake is not None and result.next_wake <= clock.now()  # more may be due: look again at once


def test_a_queued_run_whose_task_was_lost_is_sent_again_after_a_while():
    _run("lost", RunStatus.QUEUED)
    assert sweep(versions=[VERSION], cluster="sanoma").resent == 0
    clock.advance(STALE_QUEUED + timedelta(seconds=1))
    sweep_module._next_resend = 0.0
    assert sweep(versions=[VERSION], cluster="sanoma").resent == 1
    assert OrmQ.objects.count() == 1


def test_an_idle_pass_costs_one_transaction_on_postgresql():
    _run("later", RunStatus.WAITING, wake_at=clock.now() + timedelta(seconds=30), waiting_for="sleep")
    with counted() as count:
        result = sweep(versions=[VERSION], cluster="sanoma")  # looks for lost tasks too (first pass)
    assert not result
    assert count.transactions == (1 if connection.vendor == "postgresql" else 6)
    assert not result.busy  # nothing queued or running: the worker waits for a deadline or a NOTIFY
