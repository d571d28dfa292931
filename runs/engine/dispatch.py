"""Waking runs: one django-q2 task per run segment, carrying only the run id.

Always called inside the transaction that makes the run runnable: the ORM broker's insert commits
(or rolls back) with it.
"""
from __future__ import annotations

from django.db import transaction
from django_q.tasks import async_task

# A supervisor waiting with no worker up LISTENs here (PostgreSQL delivers a NOTIFY on commit).
RUNNABLE_CHANNEL = "sanoma_runnable"

ADVANCE_TASK = "runs.engine.tasks.advance_task"


def enqueue(run_id: str) -> None:
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("enqueue must run inside the transaction that makes the run runnable")
    async_task(ADVANCE_TASK, run_id, task_name=f"advance {run_id}"[:100])
    connection = transaction.get_connection()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [RUNNABLE_CHANNEL, run_id])
