"""The gauges read from the database when Prometheus scrapes: what waits, for whom, and who is up.

They are the same on every host (the database is one), so they are never written to the
multi-process files: each scrape of each host reads them once, a handful of grouped counts.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING

from django.db.models import Count, Min

from runs.engine import clock
from runs.models import Approval, ApprovalStatus, PresenceRole, Run, RunStatus
from runs.presence import seen

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric


def waiting_kind(waiting_for: str) -> str:
    """What a waiting run waits for, as a label: its first word ("approval", "sleep", "paused", ...).

    A pause's target ("paused refund") or anything after a first word is left out: the label stays a
    short list whatever the runs wait for."""
    return (waiting_for.replace(":", " ").split(" ", 1)[0] or "unknown").strip() or "unknown"


def _age(now: datetime, since: datetime | None) -> float:
    return max((now - since).total_seconds(), 0.0) if since is not None else 0.0


class DatabaseCollector:
    """`sanoma_runs_waiting`, `sanoma_approvals_pending`, `sanoma_approval_oldest_pending_seconds`,
    `sanoma_queue_runnable`, `sanoma_queue_oldest_runnable_seconds` and `sanoma_workers_live`."""

    def collect(self) -> Iterator[Metric]:
        yield from self._waiting()
        yield from self._approvals()
        yield from self._queue()
        yield from self._workers()

    def describe(self) -> Iterable[Metric]:
        return []  # read at scrape time only: never at registration

    def _waiting(self) -> Iterator[Metric]:
        from prometheus_client.metrics_core import GaugeMetricFamily

        family = GaugeMetricFamily("sanoma_runs_waiting", "Runs waiting, by workflow and what they wait for",
                                   labels=["workflow", "waiting_for"])
        counts: dict[tuple[str, str], int] = {}
        rows = (Run.objects.filter(status=RunStatus.WAITING).values_list("workflow", "waiting_for")
                .annotate(n=Count("id")).order_by())
        for workflow, waiting_for, n in rows:
            key = (workflow, waiting_kind(waiting_for))
            counts[key] = counts.get(key, 0) + n
        for (workflow, kind), n in sorted(counts.items()):
            family.add_metric([workflow, kind], n)
        yield family

    def _approvals(self) -> Iterator[Metric]:
        from prometheus_client.metrics_core import GaugeMetricFamily

        pending = GaugeMetricFamily("sanoma_approvals_pending", "Approvals pending, by approver", labels=["approver"])
        oldest = GaugeMetricFamily("sanoma_approval_oldest_pending_seconds",
                                   "Age of the oldest pending approval, by approver", labels=["approver"])
        now = clock.now()
        rows = (Approval.objects.filter(status=ApprovalStatus.PENDING).values_list("approver")
                .annotate(n=Count("id"), first=Min("requested_at")).order_by("approver"))
        for approver, n, first in rows:
            pending.add_metric([approver], n)
            oldest.add_metric([approver], _age(now, first))
        yield pending
        yield oldest

    def _queue(self) -> Iterator[Metric]:
        from prometheus_client.metrics_core import GaugeMetricFamily

        """Runnable: queued, or a sleeper whose deadline has passed (a sweep will queue it)."""
        now = clock.now()
        queued = Run.objects.filter(status=RunStatus.QUEUED).aggregate(n=Count("id"), first=Min("queued_at"))
        due = Run.objects.filter(status=RunStatus.WAITING, wake_at__lte=now).aggregate(n=Count("id"),
                                                                                         first=Min("wake_at"))
        firsts = [moment for moment in (queued["first"], due["first"]) if moment is not None]
        runnable = GaugeMetricFamily("sanoma_queue_runnable", "Runs that could run now: queued, or due to wake")
        runnable.add_metric([], queued["n"] + due["n"])
        oldest = GaugeMetricFamily("sanoma_queue_oldest_runnable_seconds",
                                   "How long the longest-waiting runnable run has been runnable (0 when none)")
        oldest.add_metric([], _age(now, min(firsts)) if firsts else 0.0)
        yield runnable
        yield oldest

    def _workers(self) -> Iterator[Metric]:
        from prometheus_client.metrics_core import GaugeMetricFamily

        family = GaugeMetricFamily("sanoma_workers_live", "Workers that beat recently, by the app version they run",
                                   labels=["version"])
        live: dict[str, int] = {}
        for one in seen():
            if one.role == PresenceRole.WORKER and one.alive:
                live[one.version] = live.get(one.version, 0) + 1
        for version, n in sorted(live.items()):
            family.add_metric([version], n)
        yield family

