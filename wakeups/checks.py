"""The worker processes' connection checks: one `SELECT 1` per idle spell, not one per task.

django-q2 closes old connections before every task (`close_old_connections`); with
CONN_HEALTH_CHECKS that makes the task's first query wait for a `SELECT 1`, a transaction of its
own, on every task (one per run segment). A connection whose last task ended without a database
error a moment ago (RECENT seconds) is as sound as one in the middle of a task, so its check is
skipped; after a longer quiet spell (an idle worker, when a server restart is likely to have gone
unseen) the check is made as before. A connection that does fail anyway fails the task's first
statement; the run stays queued and the sweep sends it again (`wakeups.sweep.resend_lost`), as for
any task lost.
"""
from __future__ import annotations

import time
from typing import Any

from django.db import connections
from django_q.signals import post_execute_in_worker, pre_execute

RECENT = 1.0  # seconds since the last task ended within which the next one's check is skipped

_ended_at = 0.0


def _task_ended(**_kwargs: Any) -> None:
    global _ended_at
    _ended_at = time.monotonic()


def _task_starts(**_kwargs: Any) -> None:
    """After django-q2's `close_old_connections()`, before the task's first query."""
    if time.monotonic() - _ended_at > RECENT:
        return
    for connection in connections.all(initialized_only=True):
        if connection.connection is not None and not connection.errors_occurred:
            connection.health_check_done = True  # type: ignore[attr-defined]  # Django sets it on connect


def install() -> None:
    """Connect the two handlers (in the worker's parent: its forked processes inherit them)."""
    post_execute_in_worker.connect(_task_ended, dispatch_uid="sanoma-task-ended")
    pre_execute.connect(_task_starts, dispatch_uid="sanoma-task-starts")
