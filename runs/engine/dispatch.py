"""Waking runs: one django-q2 task per run segment, carrying only the run id.

Always called inside the transaction that makes the run runnable: the ORM broker's insert commits
(or rolls back) with it. On PostgreSQL the enqueue also NOTIFYs `sanoma_runnable`, but only when
its task is the only one ready in the queue, i.e. when the workers may be idle, waiting for work: a
pending NOTIFY serialises commits (PostgreSQL takes one global lock to queue it at commit), and a
broker with tasks ready takes the next one without waiting for a NOTIFY anyway.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import DEFAULT_DB_ALIAS, transaction
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.brokers.orm import ORM
from django_q.conf import Conf
from django_q.tasks import async_task

# A supervisor waiting with no worker up LISTENs here (PostgreSQL delivers a NOTIFY on commit).
RUNNABLE_CHANNEL = "sanoma_runnable"

ADVANCE_TASK = "runs.engine.tasks.advance_task"

# NOTIFY unless another task of the cluster's queue is ready (this transaction's own one counts).
_NOTIFY_IF_IDLE_SQL = """
SELECT pg_notify(%s, %s) WHERE (
    SELECT count(*) FROM (SELECT 1 FROM django_q_ormq WHERE key = %s AND lock <= %s LIMIT 2) AS ready
) < 2
"""


def enqueue(run_id: str) -> None:
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("enqueue must run inside the transaction that makes the run runnable")
    async_task(ADVANCE_TASK, run_id, task_name=f"advance {run_id}"[:100])
    connection = transaction.get_connection()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_NOTIFY_IF_IDLE_SQL, [RUNNABLE_CHANNEL, run_id, Conf.CLUSTER_NAME, timezone.now()])


# ---- the enqueue as part of one statement -----------------------------------------------------

# The enqueue's two statements as parts of a caller's one statement (`runs.engine.transitions.
# start_in_one_statement`): the task's insert as a data-modifying CTE over the caller's `{source}`
# (a row when the run became runnable), and the NOTIFY as an expression of the statement's result.
# The statement's own task is not visible to its own count (one snapshot), so "no other task
# ready" is `< 1` here where `enqueue` reads `< 2`: the same condition.
TASK_CTE_SQL = """
    INSERT INTO django_q_ormq (key, payload, lock) SELECT %s, %s, %s::timestamptz FROM {source}
"""
NOTIFY_IF_IDLE_EXPR = """
    CASE WHEN (SELECT count(*) FROM (SELECT 1 FROM django_q_ormq WHERE key = %s AND lock <= %s::timestamptz LIMIT 1)
               AS ready) < 1 THEN pg_notify(%s, %s) END
"""


class _Captured:
    """A broker that keeps the package `async_task` hands it instead of writing it."""

    def __init__(self, list_key: str) -> None:
        self.list_key = list_key
        self.package: str | None = None

    def enqueue(self, package: str) -> str:
        self.package = package
        return "(in the caller's statement)"


def enqueues_in_one_statement() -> bool:
    """Whether a task can be written by the caller's statement: django-q2's ORM broker on the
    default database (the caller's), tasks queued (not run at once, `sync`), on PostgreSQL."""
    return (not Conf.SYNC and str(Conf.ORM) == DEFAULT_DB_ALIAS and _orm_broker()
            and transaction.get_connection().vendor == "postgresql")


_is_orm: bool | None = None


def _orm_broker() -> bool:
    """Whether django-q2's broker (fixed by the settings, as `async_task` picks it) is its ORM broker."""
    global _is_orm
    if _is_orm is None:
        _is_orm = isinstance(get_broker(), ORM)
    return _is_orm


def task_params(run_id: str) -> tuple[list[Any], list[Any]]:
    """The parameters of TASK_CTE_SQL and of NOTIFY_IF_IDLE_EXPR for `run_id`'s task, made by
    django-q2's `async_task` as `enqueue` makes it (its signal, its signed package), the ORM
    broker's insert left to the caller's statement (`enqueues_in_one_statement` first)."""
    captured = _Captured(str(Conf.CLUSTER_NAME))
    async_task(ADVANCE_TASK, run_id, task_name=f"advance {run_id}"[:100], broker=captured)
    if captured.package is None:  # pragma: no cover - `sync` is ruled out by enqueues_in_one_statement
        raise RuntimeError("async_task handed no package to the broker")
    now: datetime = timezone.now()
    key = captured.list_key or Conf.CLUSTER_NAME  # as the ORM broker's enqueue names it
    return [key, captured.package, now], [Conf.CLUSTER_NAME, now, RUNNABLE_CHANNEL, run_id]
