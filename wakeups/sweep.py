"""The deadline sweep: about once a second, on every worker host at once, safely.

django-q2 has no timed enqueue (its Schedule ticks every ~30 s), so the runtime wakes its own
sleepers, takes over runs whose worker died (lease expired), and re-sends runs whose wake-up task
was lost. Every wake is a conditional UPDATE (`runs.engine.transitions`), so two hosts sweeping
together wake a run once.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django_q.models import OrmQ

from runs.engine import clock, transitions
from runs.engine.pauses import PAUSED
from runs.models import Run, RunStatus
from runs.telemetry import metrics

log = logging.getLogger("sanoma.sweep")

BATCH = 200
# A queued run whose task has not started for this long, with the broker's queue empty, lost it.
STALE_QUEUED = timedelta(seconds=10)


@dataclass
class SweepResult:
    woken: int = 0
    taken_over: int = 0
    resent: int = 0
    next_wake: datetime | None = None
    # Whether a run of the versions was queued or running at the look: the next look is then due
    # soon (a lease may expire, a task may be lost); with none, only a deadline or a NOTIFY is.
    busy: bool = True

    def __bool__(self) -> bool:
        return bool(self.woken or self.taken_over or self.resent)


def wake_due_sleepers(versions: Sequence[str]) -> int:
    return transitions.wake_due_sleepers(versions=versions, now=clock.now(), limit=BATCH)


def _expired(versions: Sequence[str], now: datetime) -> list[tuple[str, str]]:
    return list(
        Run.objects.filter(status=RunStatus.RUNNING, app_version__in=list(versions), lease_until__lt=now)
        .values_list("pk", "lease_owner")[:BATCH]
    )


def _take_over(expired: Sequence[tuple[str, str]], now: datetime) -> int:
    taken = 0
    for run_id, owner in expired:
        if transitions.take_over(run_id=run_id, owner=owner, now=now):
            taken += 1
            log.warning("run %s: worker %s stopped renewing its lease; taking the run over", run_id, owner,
                        extra={"run_id": run_id})
    metrics.taken_over(taken)
    return taken


def take_over_expired(versions: Sequence[str]) -> int:
    now = clock.now()
    return _take_over(_expired(versions, now), now)


def _stale(versions: Sequence[str], cluster: str, now: datetime) -> list[tuple[str, datetime]]:
    # Only a task the broker can hand out now counts: one a killed cluster had dequeued stays
    # locked for Q_CLUSTER["retry"] seconds and must not keep its run from being re-sent.
    if OrmQ.objects.filter(key=cluster, lock__lte=now).exists():
        return []
    return [
        (run_id, queued_at) for run_id, queued_at in
        Run.objects.filter(status=RunStatus.QUEUED, app_version__in=list(versions), queued_at__lt=now - STALE_QUEUED)
        .exclude(waiting_for__startswith=PAUSED)  # parked by a paused workflow: the unpause enqueues them
        .values_list("pk", "queued_at")[:BATCH]
        if queued_at is not None
    ]


def resend_lost(versions: Sequence[str], cluster: str) -> int:
    now = clock.now()
    return sum(transitions.resend(run_id=run_id, queued_at=queued_at, now=now)
               for run_id, queued_at in _stale(versions, cluster, now))


def _next_wake(versions: Sequence[str], now: datetime) -> datetime | None:
    """The earliest deadline after `now` of a waiting run of `versions`."""
    return (Run.objects.filter(status=RunStatus.WAITING, app_version__in=list(versions), wake_at__gt=now)
            .order_by("wake_at").values_list("wake_at", flat=True).first())


def _busy(versions: Sequence[str]) -> bool:
    """Whether a run of `versions` is queued or running (one index read: the first such row)."""
    return Run.objects.filter(status__in=(RunStatus.QUEUED, RunStatus.RUNNING),
                              app_version__in=list(versions)).exists()


_next_resend = 0.0


def sweep(*, versions: Sequence[str], cluster: str = "sanoma") -> SweepResult:
    """One pass over the runs of `versions` (the worker's workflow versions). Lost tasks are looked
    for only every few seconds: a run counts as lost only after STALE_QUEUED, so looking on every
    pass would only add idle queries.

    On PostgreSQL the pass's looks (due sleepers, expired leases, lost tasks, the next deadline)
    are one read transaction; each wake is then its own conditional UPDATE, as before. An idle
    pass costs one transaction. `next_wake` says when the next sleeper is due (now, when a full
    batch was due: more may be), and `busy` whether a run was queued or running (the worker looks
    again within seconds while one is, and otherwise waits for a deadline or a NOTIFY)."""
    global _next_resend
    started = time.monotonic()
    now = clock.now()
    lost = time.monotonic() >= _next_resend
    if lost:
        _next_resend = time.monotonic() + STALE_QUEUED.total_seconds() / 4
    with transaction.atomic() if transitions.one_statement() else nullcontext():
        due = transitions.due_sleepers(versions=versions, now=now, limit=BATCH)
        expired = _expired(versions, now)
        stale = _stale(versions, cluster, now) if lost else []
        next_wake = now if len(due) >= BATCH else _next_wake(versions, now)
        busy = bool(due or expired or stale) or _busy(versions)
    resent = sum(transitions.resend(run_id=run_id, queued_at=queued_at, now=now) for run_id, queued_at in stale)
    woken = sum(transitions.wake_due(run_id=run_id, now=now) for run_id in due)
    result = SweepResult(woken=woken, taken_over=_take_over(expired, now), resent=resent, next_wake=next_wake,
                         busy=busy)
    metrics.swept(time.monotonic() - started)
    return result
