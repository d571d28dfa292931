"""The worker's broker: django-q2's ORM broker, woken by the `sanoma_runnable` NOTIFY.

django-q2's pusher asks the broker for a task in a loop; the ORM broker, finding the queue empty,
sleeps `Q_CLUSTER["poll"]` seconds, so a run made runnable (a start, a decision, a message) waited
up to that long before a worker process took it. An enqueue (`runs.engine.dispatch.enqueue`) whose
task is the only one ready also sends `pg_notify('sanoma_runnable', run_id)` in its transaction,
delivered when it commits: on PostgreSQL this broker waits on that NOTIFY instead of sleeping, so
the task is taken as soon as it is committed; the waits on an empty queue grow from `poll` seconds
to IDLE_WAIT_MAX, so an idle pusher makes a query every few seconds. On SQLite (or when listening
fails) it sleeps `poll` seconds as the ORM broker does.

On PostgreSQL a task is taken in one statement that deletes it (`FOR UPDATE SKIP LOCKED`, so two
clusters never take the same task and never wait on each other): one transaction per task instead
of django-q2's three (a read, a conditional lock update, and the acknowledging delete once the
task ran). The run row, not the task, is the truth: a task lost with the process that took it
(killed before its advance claimed the run) leaves its run queued, and the sweep re-sends it
(`wakeups.sweep.resend_lost`), as it does for any lost task; a run claimed and then abandoned is
taken over once its lease expires.

Several tasks are taken in that one statement when several are ready: the pusher (which runs the
broker, in a process of its own) hands what it takes to the cluster's worker processes through a
local queue of at most `queue_limit` tasks, and django-q2's pusher took one task at a time and then
waited, holding it, for room in that queue: a transaction a task. Attached to the local queue
(`attach`, done in `manage.py worker`), the broker waits instead until no task is left waiting in it
(its worker processes are busy with what they took) and then takes as many as the queue holds, so
the cluster never holds more tasks than its worker processes and the queue (one fewer than
django-q2's pusher held), and another host's idle worker is not left without the tasks a busy one
could not start: with the queue of 2, one take for every two tasks while tasks are ready. A take
that found fewer than it could take emptied the queue: the next one waits first (a NOTIFY ends the
wait), instead of finding the queue empty at once, then waiting.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Callable
from time import monotonic, sleep
from typing import Any, Protocol

import django_q.cluster
from django.db import InterfaceError, OperationalError, connections, transaction
from django.utils import timezone
from django_q.brokers.orm import ORM
from django_q.conf import Conf

from wakeups.listen import RUNNABLE, Listener, listens

log = logging.getLogger("sanoma.worker")

RETRY_LISTEN = 30  # seconds of polling after LISTEN failed, before listening again
# While listening, an empty queue is looked at again after `poll` seconds, then twice as long each
# time it stays empty, up to this: a NOTIFY ends any wait at once. The enqueue NOTIFYs only when no
# other task is ready (runs.engine.dispatch); a task enqueued just as the broker took the one before
# it and found the queue empty is still taken within a few polls, since the waits start short again
# after every task taken.
IDLE_WAIT_MAX = 5.0
CHECK_SECONDS = 60.0  # how often the broker's connection is looked at (its age), beside a failed take
# Attached to the cluster's local queue: how often it is looked at while a task waits in it, and the
# longest one dequeue waits for it to empty (then it returns nothing, and the pusher, having looked
# whether the cluster is stopping, asks again).
ROOM_POLL = 0.002
ROOM_WAIT = 1.0

# Take up to `bulk` ready tasks of a cluster's queue, oldest first, by deleting them: one statement.
_TAKE_SQL = """
DELETE FROM django_q_ormq WHERE id IN (
    SELECT id FROM django_q_ormq WHERE key = %s AND lock < %s ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED
) RETURNING id, payload
"""


class LocalQueue(Protocol):
    """What the broker reads of the cluster's local task queue (a `multiprocessing.Queue`)."""

    def qsize(self) -> int: ...


class ListeningORM(ORM):
    """The ORM broker; an empty dequeue waits for a `sanoma_runnable` NOTIFY (at most `poll` s)."""

    def __init__(self, list_key: str | None = None) -> None:
        super().__init__(list_key=list_key)
        self._listener: Listener | None = None
        self._listener_pid = 0  # the broker is made in the sentinel and used in the forked pusher
        self._retry_at = 0.0  # after a failed LISTEN, poll until then
        self._idle_wait = 0.0  # the next wait on an empty queue while listening (see IDLE_WAIT_MAX)
        self._check_at = 0.0  # when the connection's age is looked at next (see `_take`)
        self._local: LocalQueue | None = None  # the cluster's local task queue (`attach`)
        self._room = 1  # how many tasks that queue holds
        self._stopping: Callable[[], bool] = lambda: False
        self._drained = False  # the last take found fewer ready tasks than it could take

    def attach(self, local: LocalQueue, *, room: int, stopping: Callable[[], bool] = lambda: False) -> None:
        """Take for the cluster whose worker processes read `local`, a queue of `room` tasks at
        most: each take waits until no task waits there, then takes up to `room` (PostgreSQL).
        `stopping` ends that wait (the cluster is stopping: the pusher must look)."""
        self._local, self._room, self._stopping = local, max(1, room), stopping

    def dequeue(self) -> list[tuple[Any, Any]] | None:
        if connections[str(Conf.ORM)].vendor == "postgresql":
            bulk = self._room_free()
            if not bulk:
                return None
            poll = float(Conf.POLL)
            if self._drained:
                # The last take emptied the queue (it found fewer than it could take): looking again
                # at once would find it empty; the first wait comes before the look instead.
                self._drained = False
                self._wait_empty(poll)
            taken = self._take(bulk)
            if taken:
                self._idle_wait = poll
                self._drained = len(taken) < bulk
                return taken
            self._wait_empty(poll)
            return None
        connection = self.get_connection()
        tasks = connection.filter(key=self.list_key, lock__lt=timezone.now())[0:Conf.BULK]
        if tasks:
            taken = []
            for task in tasks:
                # a conditional update: another cluster may have been faster to this task
                if connection.filter(id=task.id, lock=task.lock).update(lock=self.timeout(task)):
                    taken.append((task.pk, task.payload))
            return taken
        self.wait(float(Conf.POLL))
        return None

    def _wait_empty(self, poll: float) -> None:
        """The next wait on an empty queue: `poll`, then twice as long each time, up to
        IDLE_WAIT_MAX while listening (a NOTIFY ends it)."""
        wait = max(self._idle_wait, poll)
        self._idle_wait = min(wait * 2, max(IDLE_WAIT_MAX, poll)) if self._listening() is not None else poll
        self.wait(wait)

    def _room_free(self) -> int:
        """How many tasks the next take may take: Conf.BULK when not attached; attached, the local
        queue's size once no task waits in it (0 when one still does after ROOM_WAIT, or the
        cluster is stopping)."""
        if self._local is None:
            return int(Conf.BULK)
        ends = monotonic() + ROOM_WAIT
        try:
            while self._local.qsize() > 0:
                if self._stopping() or monotonic() >= ends:
                    return 0
                sleep(ROOM_POLL)
        except NotImplementedError:  # no qsize() on this platform (macOS): one task at a time
            return int(Conf.BULK)
        return self._room

    def _take(self, bulk: int) -> list[tuple[Any, Any]]:
        """Take (delete) up to `bulk` ready tasks in one statement; their (id, payload)s, oldest first.

        django-q2's `get_connection()` closes old connections before every dequeue, and with
        CONN_HEALTH_CHECKS the next query is preceded by a `SELECT 1`: a transaction of its own on
        every take and every idle wait. Here the connection is looked at only every
        CHECK_SECONDS (its age, CONN_MAX_AGE), and a statement that fails on a broken connection
        is sent once more on a new one (a PostgreSQL restart), so a take costs one transaction."""
        alias = str(Conf.ORM)
        if monotonic() >= self._check_at:
            self._check_at = monotonic() + CHECK_SECONDS
            self.get_connection()
        try:
            return self._take_once(alias, bulk)
        except (OperationalError, InterfaceError):
            if connections[alias].in_atomic_block:
                raise
            log.warning("the broker's connection failed; taking again on a new one", exc_info=True)
            connections[alias].close()
            return self._take_once(alias, bulk)

    def _take_once(self, alias: str, bulk: int) -> list[tuple[Any, Any]]:
        with connections[alias].cursor() as cursor:
            cursor.execute(_TAKE_SQL, [self.list_key, timezone.now(), bulk])
            return sorted(cursor.fetchall())

    def acknowledge(self, task_id: Any) -> None:
        """Nothing left to do on PostgreSQL: taking the task deleted it."""
        if connections[str(Conf.ORM)].vendor != "postgresql":
            super().acknowledge(task_id)

    def wait(self, seconds: float) -> None:
        """Until a run becomes runnable (a NOTIFY) or `seconds` pass."""
        listener = self._listening()
        if listener is None:
            sleep(seconds)
            return
        try:
            listener.wait(seconds)
        except Exception:
            log.warning("the broker's LISTEN connection failed; polling until it is opened again", exc_info=True)
            self.close_listener()
            self._retry_at = monotonic() + RETRY_LISTEN
            sleep(seconds)

    def _listening(self) -> Listener | None:
        if self._listener is not None and self._listener_pid == os.getpid():
            return self._listener
        self._listener = None  # one inherited through a fork belongs to the parent: never used here
        if monotonic() < self._retry_at or not listens(str(Conf.ORM)) \
                or not transaction.get_autocommit(using=Conf.ORM):
            return None
        try:
            self._listener = Listener([RUNNABLE], alias=str(Conf.ORM))
        except Exception:
            log.warning("the broker could not LISTEN for runnable runs; polling for %d s", RETRY_LISTEN,
                        exc_info=True)
            self._retry_at = monotonic() + RETRY_LISTEN
            return None
        self._listener_pid = os.getpid()
        return self._listener

    def close_listener(self) -> None:
        if self._listener is not None and self._listener_pid == os.getpid():
            try:
                self._listener.close()
            except Exception:
                pass
        self._listener = None


_django_pusher = django_q.cluster.pusher


def _pusher(task_queue: Any, event: Any, broker: Any = None) -> None:
    """django-q2's pusher, its broker first attached to the cluster's local queue."""
    if isinstance(broker, ListeningORM):
        broker.attach(task_queue, room=int(Conf.QUEUE_LIMIT or 0) or int(Conf.BULK), stopping=event.is_set)
    _django_pusher(task_queue, event, broker)


def install() -> None:
    """Make django-q2's sentinel start its pusher through `_pusher` (in the worker's parent, before
    the cluster forks). django-q2 has no hook that hands the broker the local queue: its sentinel
    starts `django_q.cluster.pusher(task_queue, event, broker)`, looked up when it starts one."""
    django_q.cluster.pusher = _pusher
