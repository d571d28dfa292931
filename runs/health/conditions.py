"""The conditions an operator is told about, read from the database: what the alert rules shipped
in `deploy/prometheus/alerts.yml` watch, as the desk's health page shows them. (The wakeup's, which
the engine's layer cannot read, is `wakeups.health`'s; the page puts it in its place.)

Each condition is read here once and shown twice: the page calls `conditions()`; the alert rules
read the same facts as gauges (`runs.health.metrics` and the site's own metrics) against the same
limits, the constants below (a test holds the rules' numbers to them).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count, Min, Q
from django.db.models.functions import Coalesce

from connectors.errors import ConfigError, ErrorCode
from runs import presence
from runs.config.registry import get_config
from runs.engine import clock
from runs.engine.pauses import PAUSED
from runs.health.models import LedgerVerification
from runs.models import Approval, ApprovalStatus, PresenceRole, Run, RunStatus, Step, StepKind

QUEUE_LIMIT = timedelta(minutes=5)  # a runnable run queued longer than this is stuck
FAILURE_RATE = 0.2  # a vendor whose calls fail more often than this ...
FAILURE_WINDOW = timedelta(minutes=10)  # ... over this window ...
FAILURE_MIN_CALLS = 10  # ... with at least this many calls in it
FAILURE_SAMPLE = 1000  # the desk reads at most the last this-many calls of the window
VERIFY_STALE = timedelta(hours=26)  # a daily `ledger verify` that has not run for longer than this
VENDOR_FAILURES = (ErrorCode.DRIVER_FAILED.value, ErrorCode.DRIVER_TIMEOUT.value)


@dataclass(frozen=True)
class Condition:
    """One condition: `ok` True (fine), False (the alert of the same name fires) or None (not
    known yet, as a ledger never verified); `summary` says it in a line, `details` name what."""

    key: str
    alert: str
    title: str
    ok: bool | None
    summary: str
    details: tuple[str, ...] = field(default=())


def _age(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    if seconds < 172800:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} days"


@dataclass(frozen=True)
class Queue:
    runnable: int
    oldest: datetime | None  # when the run waiting longest was queued


def queue() -> Queue:
    """Runs that wait for a worker (queued and not held by a pause), and the longest-queued one's moment."""
    found = (Run.objects.filter(status=RunStatus.QUEUED).exclude(waiting_for__startswith=PAUSED)
             .aggregate(n=Count("id"), oldest=Min(Coalesce("queued_at", "created_at"))))
    return Queue(runnable=found["n"], oldest=found["oldest"])


def live_workers() -> list[presence.Seen]:
    return [seen for seen in presence.seen() if seen.role == PresenceRole.WORKER and seen.alive]


def approval_slas() -> dict[str, timedelta]:
    """Each workflow of this config that declares an `approval_sla`, and its SLA."""
    return {name: wf.approval_sla for name, wf in get_config().workflows.items() if wf.approval_sla is not None}


@dataclass(frozen=True)
class Overdue:
    workflow: str
    sla: timedelta
    count: int
    oldest: datetime | None


def overdue_approvals(slas: dict[str, timedelta]) -> list[Overdue]:
    """Per workflow with an SLA: its pending approvals requested longer than the SLA ago (one query)."""
    if not slas:
        return []
    now = clock.now()
    overdue = Q()
    for workflow, sla in slas.items():
        overdue |= Q(run__workflow=workflow, requested_at__lt=now - sla)
    counted: dict[str, tuple[int, datetime]] = {
        row["run__workflow"]: (row["n"], row["oldest"])
        for row in Approval.objects.filter(status=ApprovalStatus.PENDING).filter(overdue).order_by()
        .values("run__workflow").annotate(n=Count("id"), oldest=Min("requested_at"))}
    return [Overdue(workflow=workflow, sla=sla, count=counted[workflow][0] if workflow in counted else 0,
                    oldest=counted[workflow][1] if workflow in counted else None)
            for workflow, sla in sorted(slas.items())]


@dataclass(frozen=True)
class VendorCalls:
    connector: str
    calls: int
    failed: int

    @property
    def rate(self) -> float:
        return self.failed / self.calls if self.calls else 0.0


def vendor_calls() -> list[VendorCalls]:
    """Calls made within FAILURE_WINDOW (of the last FAILURE_SAMPLE calls), by connector, and how many
    the vendor failed (`driver_failed`, `driver_timeout`); calls a policy refused do not count."""
    since = clock.now() - FAILURE_WINDOW
    ops = get_config().ops
    by: dict[str, list[int]] = {}
    recent = (Step.objects.filter(kind=StepKind.CALL).order_by("-id")
              .values_list("name", "error", "created_at")[:FAILURE_SAMPLE])
    for name, error, created_at in recent:
        if created_at < since:
            continue
        code = (error or {}).get("code") if isinstance(error, dict) else None
        if code is not None and code not in VENDOR_FAILURES:
            continue  # refused, held, or failed before reaching the vendor
        op = ops.get(name)
        connector = op.vendor if op is not None else name.split(".", 1)[0]
        counts = by.setdefault(connector, [0, 0])
        counts[0] += 1
        counts[1] += code is not None
    return [VendorCalls(connector=c, calls=n, failed=f) for c, (n, f) in sorted(by.items())]


def last_verification() -> LedgerVerification | None:
    return LedgerVerification.objects.order_by("-checked_at", "-id").first()


def conditions() -> list[Condition]:
    """Every condition, in the order the health page lists them."""
    now = clock.now()
    found: list[Condition] = []

    waiting = queue()
    age = (now - waiting.oldest).total_seconds() if waiting.oldest is not None else 0.0
    stuck = waiting.runnable > 0 and age > QUEUE_LIMIT.total_seconds()
    found.append(Condition(
        key="queue", alert="SanomaRunQueuedTooLong",
        title=f"No run queued longer than {_age(QUEUE_LIMIT.total_seconds())}",
        ok=not stuck,
        summary=(f"{waiting.runnable} run(s) queued; the oldest for {_age(age)}" if waiting.runnable
                 else "no run is queued")))

    workers = live_workers()
    found.append(Condition(
        key="workers", alert="SanomaNoLiveWorker", title="A live worker while runs are runnable",
        ok=bool(workers) or waiting.runnable == 0,
        summary=(f"{len(workers)} live worker(s)" if workers
                 else f"no live worker, {waiting.runnable} run(s) runnable" if waiting.runnable
                 else "no live worker, and no run is runnable"),
        details=tuple(f"{seen.name} ({seen.version or 'no version'}), last seen {_age(seen.age.total_seconds())} ago"
                      for seen in workers)))

    try:
        overdue = overdue_approvals(approval_slas())
    except ConfigError as err:  # a config that does not resolve: the page says so and goes on
        found.append(Condition(key="approvals", alert="SanomaApprovalOverSLA", title="Approvals within their SLA",
                               ok=None, summary=f"the config does not resolve, so the SLAs are not known ({err})"))
    else:
        late = [o for o in overdue if o.count]
        found.append(Condition(
            key="approvals", alert="SanomaApprovalOverSLA", title="Approvals within their SLA",
            ok=not late,
            summary=(f"{sum(o.count for o in late)} approval(s) pending past their workflow's SLA" if late
                     else f"none overdue ({len(overdue)} workflow(s) declare an SLA)" if overdue
                     else "no workflow declares an approval_sla"),
            details=tuple(f"{o.workflow}: {o.count} pending longer than {_age(o.sla.total_seconds())}"
                          + (f", the oldest for {_age((now - o.oldest).total_seconds())}" if o.oldest else "")
                          for o in late)))

    try:
        calls = vendor_calls()
    except ConfigError as err:
        found.append(Condition(key="vendors", alert="SanomaVendorFailureRate", title="Vendors answering",
                               ok=None, summary=f"the config does not resolve ({err})"))
    else:
        failing = [c for c in calls if c.calls >= FAILURE_MIN_CALLS and c.rate > FAILURE_RATE]
        found.append(Condition(
            key="vendors", alert="SanomaVendorFailureRate", title="Vendors answering",
            ok=not failing,
            summary=(f"{len(failing)} vendor(s) failing more than {FAILURE_RATE:.0%} of calls in the last "
                     f"{_age(FAILURE_WINDOW.total_seconds())}" if failing
                     else f"{sum(c.calls for c in calls)} call(s) in the last {_age(FAILURE_WINDOW.total_seconds())}, "
                          f"no vendor failing more than {FAILURE_RATE:.0%}"),
            details=tuple(f"{c.connector}: {c.failed} of {c.calls} calls failed ({c.rate:.0%})" for c in failing)))

    verified = last_verification()
    if verified is None:
        found.append(Condition(key="ledger", alert="SanomaLedgerVerifyFailed", title="The ledger verified",
                               ok=None, summary="manage.py ledger verify has not been run yet"))
    else:
        since = (now - verified.checked_at).total_seconds()
        stale = since > VERIFY_STALE.total_seconds()
        found.append(Condition(
            key="ledger", alert="SanomaLedgerVerifyStale" if verified.ok and stale else "SanomaLedgerVerifyFailed",
            title="The ledger verified", ok=verified.ok and not stale,
            summary=(f"the last verify, {_age(since)} ago, found {verified.broken} of {verified.runs} chains broken"
                     if not verified.ok else
                     f"the last verify passed {_age(since)} ago, longer than {_age(VERIFY_STALE.total_seconds())}"
                     if stale else
                     f"the last verify passed {_age(since)} ago ({verified.runs} chains, {verified.records} records)"),
            details=(verified.first_break,) if verified.first_break else ()))
    return found
