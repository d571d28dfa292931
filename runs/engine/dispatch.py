"""Waking runs: one django-q2 task per run segment, carrying only the run id.

Always called inside the transaction that makes the run runnable: the ORM broker's insert commits
(or rolls back) with it. On PostgreSQL the enqueue also NOTIFYs `sanoma_runnable`, but only when
its task is the only one ready in the queue, i.e. when the workers may be idle, waiting for work: a
pending NOTIFY serialises commits (PostgreSQL takes one global lock to queue it at commit), and a
broker with tasks ready takes the next one without waiting for a NOTIFY anyway.
"""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone
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
