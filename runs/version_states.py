"""Reads of deploy versions: which is live, which only holds pinned runs, which is retired.

A deploy version (an AppVersion row) lists each workflow's own version (`workflows`). A run stores
its workflow version; it is **pinned** when it is unfinished and its workflow version is not one
of the latest deploy's. The deploy version that holds a pinned run is the newest (promoted last,
as `runs.versions.deploy_holding` has it) whose `workflows` contain the run's version: the commit a
worker for it is started from.

- **live**: the latest deploy (started or promoted last).
- **pinned-only**: an older deploy holding at least one pinned run.
- **retired**: `retired_at` set: no unfinished run needed it and its on-demand code was removed.
- **unused**: an older deploy holding no run, not retired yet (the supervisor retires it).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from django.db.models import Count, Q

from runs.engine import clock
from runs.engine.pauses import PAUSED
from runs.models import ENDED_STATUSES, AppVersion, Run, RunStatus


class VersionState(StrEnum):
    LIVE = "live"
    PINNED_ONLY = "pinned-only"
    UNUSED = "unused"
    RETIRED = "retired"


@dataclass(frozen=True)
class DeployVersion:
    """One deploy version as the desk and the supervisor see it."""

    version: str
    commit: str
    root: str
    started_at: datetime
    promoted_at: datetime
    workflows: dict[str, str]
    state: VersionState
    unfinished: int  # unfinished runs it holds (pinned runs; for the live version, its own runs)
    runnable: int  # of those, queued, due to wake, or left by a dead worker: what needs a worker now
    next_wake: datetime | None  # the earliest wake time of its sleeping runs
    retired_at: datetime | None
    worker_error: str
    run_versions: tuple[str, ...] = field(default=())  # the workflow versions of the runs it holds


def live_workflow_versions(latest: AppVersion | None) -> set[str]:
    """The workflow versions of the latest deploy; its own version where it lists none (a row a
    worker registered before deploys recorded workflow versions)."""
    if latest is None:
        return set()
    return set(latest.workflows.values()) if latest.workflows else {latest.version}


def holders(versions: list[AppVersion]) -> dict[str, str]:
    """{workflow version: the newest deploy version listing it}. A row with no workflow versions
    holds the runs stored under its own version."""
    held: dict[str, str] = {}
    # Newest last, so it wins: promoted last, as runs.versions.deploy_holding has it.
    for row in sorted(versions, key=lambda v: (v.promoted_at, v.first_started_at)):
        for workflow_version in (row.workflows.values() if row.workflows else [row.version]):
            held[workflow_version] = row.version
    return held


def deploy_versions(*, lead: timedelta = timedelta(0)) -> list[DeployVersion]:
    """Every deploy version, newest first, with the runs it holds. A sleeping run counts as
    runnable once its wake time is within `lead` (a worker takes a few seconds to start)."""
    rows = list(AppVersion.objects.order_by("-promoted_at", "-first_started_at"))
    latest = rows[0] if rows else None
    live = live_workflow_versions(latest)
    held = holders(rows)
    now = clock.now()
    unfinished = Run.objects.exclude(status__in=ENDED_STATUSES)
    by_version = {
        counted["app_version"]: counted for counted in unfinished.values("app_version").annotate(
            total=Count("id"),
            runnable=Count("id", filter=(
                Q(status=RunStatus.QUEUED) & ~Q(waiting_for__startswith=PAUSED)
                | Q(status=RunStatus.WAITING, wake_at__lte=now + lead)
                | Q(status=RunStatus.RUNNING, lease_until__lt=now))))
    }
    first_wake: dict[str, datetime] = {}
    for app_version, wake_at in (unfinished.filter(status=RunStatus.WAITING, wake_at__isnull=False)
                                 .order_by("wake_at").values_list("app_version", "wake_at")):
        if wake_at is not None:
            first_wake.setdefault(app_version, wake_at)
    totals: Counter[str] = Counter()
    runnable: Counter[str] = Counter()
    nexts: dict[str, datetime] = {}
    holds: dict[str, list[str]] = {}
    for app_version, counted in by_version.items():
        if latest is not None and app_version in live:
            owner = latest.version
        else:
            owner = held.get(app_version, "")
        if not owner:
            continue  # a run no deploy lists (started before any worker registered): no version holds it
        totals[owner] += counted["total"]
        runnable[owner] += counted["runnable"]
        holds.setdefault(owner, []).append(app_version)
        if app_version in first_wake:
            wake = first_wake[app_version]
            nexts[owner] = min(nexts.get(owner, wake), wake)
    answer = []
    for row in rows:
        if row is latest:
            state = VersionState.LIVE
        elif totals[row.version]:
            state = VersionState.PINNED_ONLY
        elif row.retired_at is not None:
            state = VersionState.RETIRED
        else:
            state = VersionState.UNUSED
        answer.append(DeployVersion(
            version=row.version, commit=row.commit, root=row.root, started_at=row.first_started_at,
            promoted_at=row.promoted_at, workflows=dict(row.workflows), state=state,
            unfinished=totals[row.version], runnable=runnable[row.version], next_wake=nexts.get(row.version),
            retired_at=row.retired_at, worker_error=row.worker_error,
            run_versions=tuple(sorted(holds.get(row.version, []))),
        ))
    return answer


def runs_of_version(version: str) -> list[str]:
    """The workflow versions whose runs `version` holds: what `?version=` filters the run list by.
    Empty when no such deploy version exists."""
    rows = list(AppVersion.objects.order_by("-promoted_at", "-first_started_at"))
    if not any(row.version == version for row in rows):
        return []
    if rows[0].version == version:
        return sorted(live_workflow_versions(rows[0]))
    return sorted(wv for wv, owner in holders(rows).items()
                  if owner == version and wv not in live_workflow_versions(rows[0]))
