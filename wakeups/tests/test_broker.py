"""The worker's broker (wakeups/broker.py): on PostgreSQL an enqueue's NOTIFY ends the pusher's wait
for a task at once, instead of the pusher sleeping out its poll; on SQLite it polls as django-q2's
ORM broker does. Real database, real commits, a real LISTEN connection."""
from __future__ import annotations

import multiprocessing
import threading
import time
from datetime import timedelta

import psycopg
import pytest
from django.conf import settings
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_q.models import OrmQ
from django_q.signing import SignedPackage

from runs.engine.dispatch import ADVANCE_TASK, enqueue
from wakeups import broker as broker_module
from wakeups.broker import ListeningORM
from wakeups.listen import RUNNABLE, Listener

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


@postgres_only
def test_a_task_is_taken_by_deleting_it_in_one_statement_and_its_ack_costs_nothing(broker):
    with transaction.atomic():
        enqueue("refund-taken")
    with CaptureQueriesContext(connection) as taking:
        [(ack_id, payload)] = broker.dequeue()
    assert len(taking.captured_queries) == 1
    assert SignedPackage.loads(payload)["args"] == ("refund-taken",)
    assert not OrmQ.objects.exists()  # taken is gone: no lock to update, nothing to acknowledge
    with CaptureQueriesContext(connection) as acking:
        broker.acknowledge(ack_id)
    assert acking.captured_queries == []


@postgres_only
def test_a_task_another_cluster_is_taking_is_skipped_not_waited_for(broker):
    with transaction.atomic():
        enqueue("refund-first")
    with transaction.atomic():
        enqueue("refund-second")
    first, second = OrmQ.objects.order_by("id").values_list("id", flat=True)
    other = psycopg.connect(**_psycopg_params(), autocommit=False)
    try:
        # Another cluster's take of the first task, not yet committed: its row is locked.
        other.execute(broker_module._TAKE_SQL, [broker.list_key, timezone.now(), 1])
        started = time.monotonic()
        [(ack_id, payload)] = broker.dequeue()
        assert time.monotonic() - started < 2.0  # SKIP LOCKED: no wait for the other transaction
        assert ack_id == second and SignedPackage.loads(payload)["args"] == ("refund-second",)
        other.commit()
    finally:
        other.close()
    assert not OrmQ.objects.filter(id__in=[first, second]).exists()


@postgres_only
def test_an_enqueue_notifies_only_when_its_task_is_the_only_one_ready(broker):
    listener = Listener([RUNNABLE])
    try:
        listener.wait(0)
        with transaction.atomic():
            enqueue("idle-first")
        assert [p for _, p in _notes(listener)] == ["idle-first"]  # nothing else was ready
        with transaction.atomic():
            enqueue("busy-second")
        assert _notes(listener, seconds=0.5) == []  # a task is ready: the broker takes it without a NOTIFY
        assert len(broker.dequeue() or []) == 1 and len(broker.dequeue() or []) == 1
        with transaction.atomic():
            enqueue("idle-third")
        assert [p for _, p in _notes(listener)] == ["idle-third"]
    finally:
        listener.close()


def test_an_idle_broker_waits_longer_each_time_up_to_its_longest_and_short_again_after_a_task(broker, monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr(broker, "wait", waits.append)
    for _ in range(10):
        assert broker.dequeue() is None
    poll = float(str(settings.Q_CLUSTER["poll"]))
    if connection.vendor != "postgresql":  # no LISTEN: it polls as django-q2 does
        assert waits == [poll] * 10
        return
    assert waits == [min(poll * 2 ** n, broker_module.IDLE_WAIT_MAX) for n in range(10)]
    assert waits[-1] == broker_module.IDLE_WAIT_MAX
    with transaction.atomic():
        enqueue("refund-after-idle")
    assert broker.dequeue()
    waits.clear()
    assert broker.dequeue() is None
    assert waits == [poll]


@postgres_only
def test_a_task_lost_with_the_process_that_took_it_is_sent_again_by_the_sweep(broker):
    from runs.engine import clock, transitions
    from runs.models import Run
    from wakeups.sweep import STALE_QUEUED, resend_lost

    run = Run(id="lost-task", workflow="w", app_version="w@1", input={}, started_by="alice",
              status="queued", created_at=clock.now(), updated_at=clock.now(), queued_at=clock.now())
    with transaction.atomic():
        transitions.start(run=run)
    assert broker.dequeue()  # taken, and the process that took it dies before its advance claims the run
    assert not OrmQ.objects.exists()
    assert resend_lost(["w@1"], broker.list_key) == 0  # not yet: a queued run is lost only after a while
    clock.advance(STALE_QUEUED + timedelta(seconds=1))
    try:
        assert resend_lost(["w@1"], broker.list_key) == 1
    finally:
        clock.reset()
    [task] = OrmQ.objects.all()
    assert SignedPackage.loads(task.payload)["args"] == ("lost-task",)


def _psycopg_params() -> dict:
    params = dict(connection.get_connection_params())
    for key in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(key, None)
    return params


def _notes(listener: Listener, seconds: float = 5.0) -> list[tuple[str, str]]:
    ends = time.monotonic() + seconds
    notes: list[tuple[str, str]] = []
    while not notes and (left := ends - time.monotonic()) > 0:
        notes = listener.wait(left)
    return notes


@postgres_only
def test_a_take_after_another_does_not_ask_the_server_whether_the_connection_lives(broker, monkeypatch):
    """django-q2's broker closes old connections before every dequeue, so with CONN_HEALTH_CHECKS
    each take cost a `SELECT 1` too (a transaction of its own); this one looks at its connection
    every CHECK_SECONDS only."""
    monkeypatch.setattr(broker, "wait", lambda seconds: None)
    broker.dequeue()  # the first take looks at the connection
    asked: list[bool] = []
    usable = connection.is_usable
    def counted() -> bool:
        asked.append(True)
        return usable()

    monkeypatch.setattr(connection, "is_usable", counted)
    for _ in range(5):
        assert broker.dequeue() is None
    assert asked == []
    broker._check_at = 0.0  # CHECK_SECONDS later
    broker.dequeue()
    assert asked == [True]


@postgres_only
def test_a_take_on_a_connection_the_server_closed_is_made_again_on_a_new_one(broker, monkeypatch):
    monkeypatch.setattr(broker, "wait", lambda seconds: None)
    broker.dequeue()
    with transaction.atomic():
        enqueue("refund-after-restart")
    with psycopg.connect(**_psycopg_params(), autocommit=True) as admin:  # as a restart would
        admin.execute("SELECT pg_terminate_backend(%s)", [connection.connection.info.backend_pid])
    taken = broker.dequeue()
    assert taken and len(taken) == 1


def _ready(n: int, prefix: str) -> None:
    for i in range(n):
        with transaction.atomic():
            enqueue(f"{prefix}-{i}")


def _args(taken: list | None) -> list[str]:
    return [SignedPackage.loads(payload)["args"][0] for _, payload in taken or []]


@postgres_only
def test_attached_to_its_cluster_it_takes_as_many_ready_tasks_as_the_local_queue_holds_in_one_statement(broker):
    """django-q2's pusher took one task a transaction; attached to the cluster's local queue (2
    tasks here, as `queue_limit` sets it), the broker takes two at once while they are ready."""
    local: multiprocessing.Queue = multiprocessing.get_context("fork").Queue(maxsize=2)
    broker.attach(local, room=2)
    _ready(3, "bulk")
    with CaptureQueriesContext(connection) as taking:
        taken = broker.dequeue()
    assert len(taking.captured_queries) == 1
    assert _args(taken) == ["bulk-0", "bulk-1"]  # oldest first
    assert _args(broker.dequeue()) == ["bulk-2"]  # the rest, on the next take
    local.close()


@postgres_only
def test_attached_it_takes_nothing_while_a_task_waits_in_the_local_queue_and_takes_once_a_worker_has_it(
        broker, monkeypatch):
    """While a task waits in the cluster's local queue (its worker processes are busy), a task
    taken would wait too: the broker leaves it in the database, where another host's idle worker
    may take it."""
    monkeypatch.setattr(broker_module, "ROOM_WAIT", 0.3)
    local: multiprocessing.Queue = multiprocessing.get_context("fork").Queue(maxsize=2)
    broker.attach(local, room=2)
    local.put({"waiting": "a task no worker process has taken yet"})
    _ready(1, "held")
    ends = time.monotonic() + 5.0
    while local.qsize() == 0 and time.monotonic() < ends:  # the queue's feeder thread has put it
        time.sleep(0.01)
    with CaptureQueriesContext(connection) as looking:
        assert broker.dequeue() is None
    assert looking.captured_queries == []  # not even looked for
    assert OrmQ.objects.count() == 1
    threading.Timer(0.1, local.get).start()  # a worker process takes the waiting task
    assert _args(broker.dequeue()) == ["held-0"]
    local.close()


@postgres_only
def test_attached_a_wait_for_room_ends_when_the_cluster_stops(broker):
    local: multiprocessing.Queue = multiprocessing.get_context("fork").Queue(maxsize=2)
    stopping = threading.Event()
    broker.attach(local, room=2, stopping=stopping.is_set)
    local.put({"waiting": "a task"})
    _ready(1, "stopping")
    threading.Timer(0.1, stopping.set).start()
    started = time.monotonic()
    assert broker.dequeue() is None
    assert time.monotonic() - started < broker_module.ROOM_WAIT
    local.get()
    local.close()


@postgres_only
def test_attached_a_take_that_emptied_the_queue_is_followed_by_a_wait_not_by_a_look(broker, monkeypatch):
    """Runs that come slower than they are run: each take found the one task, and the next at once
    found the queue empty. A take that found fewer than it could take emptied the queue, so the next
    look comes after a wait (which a NOTIFY ends), one empty take fewer each time."""
    local: multiprocessing.Queue = multiprocessing.get_context("fork").Queue(maxsize=2)
    broker.attach(local, room=2)
    _ready(1, "alone")
    assert _args(broker.dequeue()) == ["alone-0"]  # one of the two it could take: the queue is empty now
    waits: list[float] = []
    monkeypatch.setattr(broker, "wait", waits.append)
    poll = float(str(settings.Q_CLUSTER["poll"]))
    with CaptureQueriesContext(connection) as looking:
        assert broker.dequeue() is None
    assert waits == [poll, poll * 2] and len(looking.captured_queries) == 1  # waited, looked once, waits on
    _ready(1, "next")
    waits.clear()
    assert _args(broker.dequeue()) == ["next-0"]  # not drained by the empty take: it looks at once
    assert waits == []
    local.close()
