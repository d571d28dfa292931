"""Deadlines, idleness and the stop rule of a worker that scales to zero.

The next deadline is the earliest of this version's sleeping runs' wake times and the schedules'
next fires (approval, message and child-run waits have none). A worker is idle when no run of its
version is queued or running and no deadline falls within the horizon; a worker whose version is
no longer the latest is idle too.

The stop rule, checked every few seconds with exactly one wakeup declared: when idle, register the
next deadline with the wakeup (its `register` operation: input parsed, a call context acting as
the `wakeup` agent with the wakeup's secrets, an idempotency key `wakeup:<id>:<fresh uuid>`, no
ledger record), record it on the wakeup row, then stop only if still idle with the same deadline.
A failed registration is recorded (`last_error`), logged once per distinct message and retried at
the next check; the worker keeps running. With no deadline nothing is registered and the worker
stops (`at` null). With no wakeup declared, or several, the worker never stops itself.
"""
from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from connectors.drivers import CallContext
from runs.config.resolution import ResolvedConfig
from runs.engine import clock
from runs.engine.pauses import PAUSED
from runs.models import Run, RunStatus
from runs.versions import is_latest
from wakeups.declare import REGISTER_OP, WAKEUP_AGENT, RegisterInput, WakeupDeclaration
from wakeups.models import WakeupRow
from wakeups.schedules import Firer

log = logging.getLogger("sanoma.wakeup")

DEFAULT_HORIZON = timedelta(seconds=60)


def next_sleeper(versions: Sequence[str]) -> datetime | None:
    """The earliest deadline of a waiting run of `versions` (a worker's workflow versions)."""
    return (Run.objects.filter(status=RunStatus.WAITING, app_version__in=list(versions), wake_at__isnull=False)
            .order_by("wake_at").values_list("wake_at", flat=True).first())


def next_deadline(config: ResolvedConfig, *, now: datetime | None = None) -> datetime | None:
    now = now or clock.now()
    found = [d for d in (next_sleeper(config.owned_versions), Firer(config).next_fire(now)) if d is not None]
    return min(found) if found else None


@dataclass(frozen=True)
class Idleness:
    idle: bool
    deadline: datetime | None
    reason: str


def idleness(config: ResolvedConfig, *, horizon: timedelta = DEFAULT_HORIZON) -> Idleness:
    now = clock.now()
    deadline = next_deadline(config, now=now)
    busy = (Run.objects.filter(app_version__in=config.owned_versions, status__in=(RunStatus.QUEUED, RunStatus.RUNNING))
            .exclude(status=RunStatus.QUEUED, waiting_for__startswith=PAUSED))  # parked by a paused workflow
    if busy.exists():
        return Idleness(False, deadline, "runs are queued or running")
    if not is_latest(config.version):
        return Idleness(True, deadline, "this version is no longer the latest")
    if deadline is not None and deadline <= now + horizon:
        return Idleness(False, deadline, f"a deadline at {deadline.isoformat()} is within the horizon")
    return Idleness(True, deadline, "nothing to run before the next deadline")


@dataclass
class Outcome:
    stop: bool
    at: datetime | None = None
    registered: bool = False
    error: str = ""


@dataclass
class StopRule:
    """`check()` once every few seconds; when it returns `stop`, call `stopped()` after stopping."""

    config: ResolvedConfig
    wakeups: Sequence[WakeupDeclaration]
    horizon: timedelta = DEFAULT_HORIZON
    on_stopped: Callable[[datetime | None], None] | None = None
    _logged: set[str] = field(default_factory=set)

    @property
    def enabled(self) -> bool:
        return len(self.wakeups) == 1

    def register(self, at: datetime) -> None:
        wakeup = self.wakeups[0]
        payload = RegisterInput.model_validate({"at": at})
        context = CallContext(idempotency_key=f"wakeup:{wakeup.id}:{uuid.uuid4()}", run_id="", op_id=REGISTER_OP,
                              by=WAKEUP_AGENT, secrets=dict(wakeup.secrets))
        wakeup.register(payload, context)

    def check(self, *, closed: Callable[[], bool] = lambda: False) -> Outcome:
        if not self.enabled or closed():
            return Outcome(stop=False)
        first = idleness(self.config, horizon=self.horizon)
        if not first.idle:
            return Outcome(stop=False, at=first.deadline)
        registered = False
        if first.deadline is not None:
            try:
                self.register(first.deadline)
            except Exception as err:
                message = f"{type(err).__name__}: {err}"
                WakeupRow.record(last_error=message)
                if message not in self._logged:
                    self._logged.add(message)
                    log.error("registering the next deadline (%s) with wakeup %s failed; the worker keeps "
                              "running and tries again: %s", first.deadline.isoformat(), self.wakeups[0].id, message)
                return Outcome(stop=False, at=first.deadline, error=message)
            registered = True
        WakeupRow.record(at=first.deadline, last_error="")
        second = idleness(self.config, horizon=self.horizon)
        if closed() or not second.idle or second.deadline != first.deadline:
            return Outcome(stop=False, at=second.deadline, registered=registered)
        return Outcome(stop=True, at=first.deadline, registered=registered)

    def stopped(self, at: datetime | None, stop_worker: Callable[[], None]) -> None:
        """Record `stopped_at`, stop the worker (logging, not raising, if it cannot stop cleanly),
        then tell `on_stopped`."""
        WakeupRow.record(stopped_at=clock.now())
        try:
            stop_worker()
        except Exception:
            log.exception("the worker did not stop cleanly")
        log.info("idle: the worker stopped; next deadline %s", at.isoformat() if at else "none")
        if self.on_stopped is not None:
            self.on_stopped(at)
