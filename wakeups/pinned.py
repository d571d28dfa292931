"""A worker for a pinned deploy version (`manage.py worker --pinned VERSION`), as the supervisor
starts one (wakeups/fleet.py) from a git worktree of the commit that version was deployed from.

It advances the runs of its own workflow versions that the latest deploy does not have (the pinned
runs) and nothing else of the company's: no schedules fire, no deploy runs (it never migrates a
run nor becomes the latest version), no workflow rows are synced, no restart a deploy asks for
applies to it (its code is a fixed commit). Its tree must resolve to exactly VERSION: a tree that
resolves to another version (the deploy had uncommitted changes, or set SANOMA_APP_VERSION) would
hold none of the pinned runs, so it refuses to start, naming both versions.

Its stop rule needs no wakeup: it stops once none of its pinned runs is queued or running and no
sleeping one is due within the horizon. The supervisor starts it again when one becomes runnable.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Q

from runs.config.resolution import ResolvedConfig
from runs.engine import clock
from runs.engine.pauses import PAUSED
from runs.models import AppVersion, Run, RunStatus
from runs.version_states import live_workflow_versions
from wakeups.idle import Outcome


def pinned_problem(config: ResolvedConfig, *, version: str) -> str:
    """Why this tree cannot serve as `version`'s worker, or ''."""
    if config.version != version:
        return (f"--pinned {version}: this config root ({config.root}) resolves to {config.version}, not to the "
                "pinned version, so it holds none of its runs (was that version deployed with uncommitted changes "
                "or with SANOMA_APP_VERSION set?)")
    if not AppVersion.objects.filter(version=version).exists():
        return f"--pinned {version}: no deploy of that version is recorded (see the Versions page)"
    return ""


def pinned_versions(config: ResolvedConfig) -> set[str]:
    """This worker's workflow versions that the latest deploy does not have: its pinned runs'."""
    latest = AppVersion.objects.order_by("-promoted_at", "-first_started_at").first()
    return set(config.workflow_versions.values()) - live_workflow_versions(latest)


def pinned_busy(config: ResolvedConfig, *, horizon: timedelta) -> tuple[bool, datetime | None]:
    """Whether a pinned run of this version is queued (not paused), running or due within the
    horizon; and the earliest wake time of its sleeping runs."""
    own = pinned_versions(config)
    if not own:
        return False, None
    now = clock.now()
    runs = Run.objects.filter(app_version__in=own)
    busy = runs.filter(
        Q(status=RunStatus.QUEUED) & ~Q(waiting_for__startswith=PAUSED)
        | Q(status=RunStatus.RUNNING)
        | Q(status=RunStatus.WAITING, wake_at__lte=now + horizon)).exists()
    deadline = (runs.filter(status=RunStatus.WAITING, wake_at__isnull=False).order_by("wake_at")
                .values_list("wake_at", flat=True).first())
    return busy, deadline


@dataclass
class PinnedStopRule:
    """The stop rule of a pinned worker: what `Worker.run` asks of a StopRule, without a wakeup."""

    config: ResolvedConfig
    horizon: timedelta

    @property
    def enabled(self) -> bool:
        return True

    def check(self, *, closed: Callable[[], bool] = lambda: False) -> Outcome:
        if closed():
            return Outcome(stop=False)
        busy, deadline = pinned_busy(self.config, horizon=self.horizon)
        return Outcome(stop=not busy, at=deadline)

    def stopped(self, at: datetime | None, stop_worker: Callable[[], None]) -> None:
        stop_worker()  # the supervisor looks at the pinned runs' wake times itself: nothing to register
