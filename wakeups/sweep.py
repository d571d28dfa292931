"""The deadline sweep: about once a second, on every worker host at once, safely.

django-q2 has no timed enqueue (its Schedule ticks every ~30 s), so the runtime wakes its own
sleepers, takes over runs whose worker died (lease expired), and re-sends runs whose wake-up task
was lost. Every wake is a conditional UPDATE, so two hosts sweeping together wake a run once.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django_q.models import OrmQ

from runs.engine import clock
from runs.engine.dispatch import enqueue
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


def wake_due_sleepers(version: str) -> int:
    now = clock.now()
    due = list(
        Run.objects.filter(status=RunStatus.WAITING, app_version=version, wake_at__lte=now)
        .order_by("wake_at").values_list("pk", flat=True)[:BATCH]
    )
    woken = 0
    for run_id in due:
        with transaction.atomic():
            if Run.objects.filter(pk=run_id, status=RunStatus.WAITING, wake_at__lte=now).update(
                status=RunStatus.QUEUED, wake_at=None, waiting_for="", queued_at=now, updated_at=now
            ):
                enqueue(run_id)
                woken += 1
    return woken


def take_over_expired(version: str) -> int:
    now = clock.now()
    expired = list(
        Run.objects.filter(status=RunStatus.RUNNING, app_version=version, lease_until__lt=now)
        .values_list("pk", "lease_owner")[:BATCH]
    )
    taken = 0
    for run_id, owner in expired:
        with transaction.atomic():
            if Run.objects.filter(pk=run_id, status=RunStatus.RUNNING, lease_owner=owner, lease_until__lt=now).update(
                status=RunStatus.QUEUED, lease_owner="", lease_until=None, queued_at=now, updated_at=now
            ):
                enqueue(run_id)
                taken += 1
                log.warning("run %s: worker %s stopped renewing its lease; taking the run over", run_id, owner)
    return taken


def resend_lost(version: str, cluster: str) -> int:
    now = clock.now()
    # Only a task the broker can hand out now counts: one a killed cluster had dequeued stays
    # locked for Q_CLUSTER["retry"] seconds and must not keep its run from being re-sent.
    if OrmQ.objects.filter(key=cluster, lock__lte=now).exists():
        return 0
    stale = list(
        Run.objects.filter(status=RunStatus.QUEUED, app_version=version, queued_at__lt=now - STALE_QUEUED)
        .values_list("pk", "queued_at")[:BATCH]
    )
    resent = 0
    for run_id, queued_at in stale:
        with transaction.atomic():
            if Run.objects.filter(pk=run_id, status=RunStatus.QUEUED, queued_at=queued_at).update(queued_at=now):
                enqueue(run_id)
                resent += 1
    return resent


_next_resend = 0.0


def sweep(*, version: str, cluster: str = "sanoma") -> SweepResult:
    """One pass. Lost tasks are looked for only every few seconds: a run counts as lost only after
    STALE_QUEUED, so looking on every pass would only add idle queries."""
    global _next_resend
    resent = 0
    if time.monotonic() >= _next_resend:
        resent = resend_lost(version, cluster)
        _next_resend = time.monotonic() + STALE_QUEUED.total_seconds() / 4
    return SweepResult(woken=wake_due_sleepers(version), taken_over=take_over_expired(version), resent=resent)
