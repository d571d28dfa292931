"""The worker's broker (wakeups/broker.py): on PostgreSQL an enqueue's NOTIFY ends the pusher's wait
for a task at once, instead of the pusher sleeping out its poll; on SQLite it polls as django-q2's
ORM broker does. Real database, real commits, a real LISTEN connection."""
from __future__ import annotations

import threading

import pytest
from django.conf import settings
from django.db import connection, transaction
from django_q.models import OrmQ
from django_q.signing import SignedPackage

from runs.engine.dispatch import ADVANCE_TASK, enqueue
from wakeups.broker import ListeningORM

pytestmark = pytest.mark.django_db(transaction=True)
postgres_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="LISTEN/NOTIFY is PostgreSQL's")


@pytest.fixture
def broker():
    made = ListeningORM(list_key=str(settings.Q_CLUSTER["name"]))  # as `manage.py worker` makes it
    yield made
    made.close_listener()
    OrmQ.objects.all().delete()


def test_an_empty_queue_gives_nothing(broker):
    assert broker.dequeue() is None  # nothing queued: it waited out its poll


def test_it_takes_what_django_q2_enqueues_for_its_cluster(broker):
    with transaction.atomic():
        enqueue("refund-queued")
    [(ack_id, payload)] = broker.dequeue()
    assert SignedPackage.loads(payload)["args"] == ("refund-queued",)
    broker.acknowledge(ack_id)
    assert not OrmQ.objects.exists()


@postgres_only
def test_an_enqueue_ends_the_wait_when_it_commits_and_the_task_is_taken(broker):
    assert broker.dequeue() is None  # listening from here on
    woke = threading.Event()

    def pusher() -> None:
        broker.wait(120.0)  # far longer than the test may take: only a NOTIFY ends it early
        woke.set()

    thread = threading.Thread(target=pusher, daemon=True)
    thread.start()
    with transaction.atomic():
        enqueue("refund-woken")
        assert not woke.wait(0.5)  # not before the commit
    assert woke.wait(30.0), "the commit's NOTIFY did not end the broker's wait"
    thread.join()
    [(ack_id, payload)] = broker.dequeue()
    task = SignedPackage.loads(payload)
    assert (task["func"], task["args"]) == (ADVANCE_TASK, ("refund-woken",))
    assert broker.dequeue() is None  # taken once
    broker.acknowledge(ack_id)


@postgres_only
def test_a_rolled_back_enqueue_wakes_nobody(broker):
    assert broker.dequeue() is None
    woke = threading.Event()

    def pusher() -> None:
        broker.wait(2.0)
        woke.set()

    thread = threading.Thread(target=pusher, daemon=True)
    with pytest.raises(RuntimeError), transaction.atomic():
        thread.start()
        enqueue("refund-rolled-back")
        raise RuntimeError("the decision failed")
    assert not woke.wait(1.0)  # no NOTIFY: it waits out its 2 s
    thread.join()
    assert broker.dequeue() is None and not OrmQ.objects.exists()


@pytest.mark.skipif(connection.vendor == "postgresql", reason="SQLite has no LISTEN")
def test_on_sqlite_the_broker_polls(broker):
    broker.wait(0.01)
    assert broker._listener is None
