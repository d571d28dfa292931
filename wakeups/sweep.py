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
from dataclasses import dataclass
from datetime import timedelta

from django_q.models import OrmQ

from runs.engine import clock, transitions
from runs.engine.pauses import PAUSED
from runs.models import Run, RunStatus

log = logging.getLogger("sanoma.sweep")

BATCH = 200
# A queued run whose task has not started for this long, with the broker's queue empty, lost it.
STALE_QUEUED = timedelta(seconds=10)


@dataclass
class SweepResult:
    woken: int = 0
    taken_over: int = 0
    resent: int = 0

    def __bool__(self) -> bool:
        return bool(self.woken or self.taken_over or self.resent)


def wake_due_sleepers(versions: Sequence[str]) -> int:
    return transitions.wake_due_sleepers(versions=versions, now=clock.now(), limit=BATCH)


def take_over_expired(versions: Sequence[str]) -> int:
    now = clock.now()
    expired = list(
        Run.objects.filter(status=RunStatus.RUNNING, app_version__in=list(versions), lease_until__lt=now)
        .values_list("pk", "lease_owner")[:BATCH]
    )
    taken = 0
    for run_id, owner in expired:
        if transitions.take_over(run_id=run_id, owner=owner, now=now):
            taken += 1
            log.warning("run %s: worker %s stopped renewing its lease; taking the run over", run_id, owner,
                        extra={"run_id": run_id})
    return taken


def resend_lost(versions: Sequence[str], cluster: str) -> int:
    now = clock.now()
    # Only a task the broker can hand out now counts: one a killed cluster had dequeued stays
    # locked for Q_CLUSTER["retry"] seconds and must not keep its run from being re-sent.
    if OrmQ.objects.filter(key=cluster, lock__lte=now).exists():
        return 0
    stale = list(
        Run.objects.filter(status=RunStatus.QUEUED, app_version__in=list(versions), queued_at__lt=now - STALE_QUEUED)
        .exclude(waiting_for__startswith=PAUSED)  # parked by a paused workflow: the unpause enqueues them
        .values_list("pk", "queued_at")[:BATCH]
    )
    return sum(transitions.resend(run_id=run_id, queued_at=queued_at, now=now)
               for run_id, queued_at in stale if queued_at is not None)


_next_resend = 0.0


def sweep(*, versions: Sequence[str], cluster: str = "sanoma") -> SweepResult:
    """One pass over the runs of `versions` (the worker's workflow versions). Lost tasks are looked
    for only every few seconds: a run counts as lost only after STALE_QUEUED, so looking on every
    pass would only add idle queries."""
    global _next_resend
    resent = 0
    if time.monotonic() >= _next_resend:
        resent = resend_lost(versions, cluster)
        _next_resend = time.monotonic() + STALE_QUEUED.total_seconds() / 4
    return SweepResult(woken=wake_due_sleepers(versions), taken_over=take_over_expired(versions), resent=resent)
