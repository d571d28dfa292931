"""Schedules: when a scheduled workflow fires, and firing it.

A fire starts one run, id `<workflow>@<fire time, UTC ISO>`, by the `schedule` agent with the input
`{}`. Each schedule keeps a cursor (`ScheduleState.last_fire_at`): the fires after it that are due
are handled oldest first, each in one transaction that moves the cursor from the value read and
starts the run, so two workers firing together start a fire's run once and count it once. Fires
older than the catch-up window are counted and reported, not run. With `overlap: skip` a fire
whose predecessor's run is unfinished is skipped (logged and counted).

Cron expressions are read by cronsim in the schedule's timezone, as cron does: on the night
daylight saving time ends a local time that happens twice fires once; on the night it starts, a
local time that does not exist fires at the first minute after the gap.
"""
from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from cronsim import CronSim
from django.contrib.auth import get_user_model
from django.db import transaction

from runs import services
from runs.config.resolution import ResolvedConfig
from runs.config.workflows import Schedule, WorkflowDefinition
from runs.engine import clock
from runs.models import ENDED_STATUSES, Run
from runs.seed import permissions, seed_person
from runs.versions import is_latest
from wakeups.models import ScheduleState, WakeupRow

log = logging.getLogger("sanoma.schedules")

SCHEDULE_AGENT = "schedule"
# A fire handled later than this after its time counts as back-filled (the worker was down).
LATE = timedelta(seconds=60)


def scheduled(config: ResolvedConfig) -> list[WorkflowDefinition]:
    return [wf for wf in config.workflows.values() if isinstance(wf.trigger, Schedule)]


def schedule_of(wf: WorkflowDefinition) -> Schedule:
    assert isinstance(wf.trigger, Schedule)
    return wf.trigger


def fires_after(schedule: Schedule, after: datetime) -> Iterator[datetime]:
    """The fire times strictly after `after`, in UTC, earliest first (endless)."""
    if schedule.every is not None:
        step = round(schedule.every * 1000)
        k = clock.to_ms(after) // step + 1
        while True:
            yield clock.from_ms(k * step)
            k += 1
    assert schedule.cron is not None
    local = after.astimezone(ZoneInfo(schedule.timezone))
    for fire in CronSim(schedule.cron, local):
        yield fire.astimezone(UTC)


def fires_between(schedule: Schedule, after: datetime, until: datetime) -> list[datetime]:
    """The fire times in (after, until], oldest first."""
    found = []
    for fire in fires_after(schedule, after):
        if fire > until:
            break
        found.append(fire)
    return found


def next_fires(schedule: Schedule, after: datetime, count: int) -> list[datetime]:
    fires = fires_after(schedule, after)
    return [next(fires) for _ in range(count)]


def run_id_for(workflow: str, fire: datetime) -> str:
    moment = fire.astimezone(UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond // 1000:03d}"
    return f"{workflow}@{text}Z"


def ensure_schedule_agent() -> None:
    """The `schedule` user exists and may start workflows (created once, never overwritten)."""
    User = get_user_model()
    user = User.objects.filter(username=SCHEDULE_AGENT).first()
    if user is None:
        seed_person(username=SCHEDULE_AGENT, perms=("runs.start_workflow",))
    elif not user.has_perm("runs.start_workflow"):
        user.user_permissions.add(*permissions(("runs.start_workflow",)))


@dataclass
class FireReport:
    started: list[str] = field(default_factory=list)
    backfilled: list[str] = field(default_factory=list)
    skipped: list[datetime] = field(default_factory=list)
    missed: int = 0

    def __bool__(self) -> bool:
        return bool(self.started or self.skipped or self.missed)


def initial_cursor(now: datetime) -> datetime:
    """Where a schedule seen for the first time starts: the time the worker last stopped itself
    (its fires since then are back-filled), or now."""
    stopped = WakeupRow.objects.filter(pk=1).values_list("stopped_at", flat=True).first()
    return stopped if stopped is not None and stopped < now else now


def fire_one(config: ResolvedConfig, wf: WorkflowDefinition, *, now: datetime, report: FireReport) -> None:
    """Handle `wf`'s due fires (oldest first), each exactly once whatever other workers do."""
    schedule = schedule_of(wf)
    state = ScheduleState.objects.filter(pk=wf.name).first()
    if state is None:
        ScheduleState.objects.get_or_create(pk=wf.name, defaults={"last_fire_at": initial_cursor(now)})
        state = ScheduleState.objects.get(pk=wf.name)
    cursor = state.last_fire_at or now
    due = fires_between(schedule, cursor, now)
    if not due:
        return
    oldest_kept = now - timedelta(seconds=schedule.catchup)
    missed = [fire for fire in due if fire < oldest_kept]
    if missed:
        claimed = ScheduleState.objects.filter(pk=wf.name, last_fire_at=cursor).update(
            last_fire_at=missed[-1], missed=state.missed + len(missed), last_missed_at=missed[-1])
        if not claimed:
            return  # another worker moved the cursor: it handles these fires
        cursor = missed[-1]
        report.missed += len(missed)
        log.warning("schedule %s: %d fire(s) from %s to %s are older than the catch-up window (%s s) "
                    "and were not run", wf.name, len(missed), missed[0].isoformat(), missed[-1].isoformat(),
                    int(schedule.catchup), extra={"workflow": wf.name})
    for fire in due[len(missed):]:
        with transaction.atomic():
            current = ScheduleState.objects.select_for_update().get(pk=wf.name)
            if current.last_fire_at != cursor:
                return  # another worker handled this fire
            mine = ScheduleState.objects.filter(pk=wf.name, last_fire_at=cursor)
            if schedule.overlap == "skip" and current.last_run_id and Run.objects.filter(
                    pk=current.last_run_id).exclude(status__in=ENDED_STATUSES).exists():
                if not mine.update(last_fire_at=fire, skipped=current.skipped + 1, last_skip_at=fire):
                    return
                report.skipped.append(fire)
                log.info("schedule %s: skipped the fire at %s: run %s of the last fire is unfinished "
                         "(overlap: skip)", wf.name, fire.isoformat(), current.last_run_id,
                         extra={"workflow": wf.name})
            else:
                run_id = run_id_for(wf.name, fire)
                late = now - fire > LATE
                if not mine.update(last_fire_at=fire, last_run_id=run_id, backfilled=current.backfilled + int(late)):
                    return
                services.start_or_get(workflow=wf.name, input={}, started_by=SCHEDULE_AGENT, run_id=run_id,
                                      config=config)
                report.started.append(run_id)
                if late:
                    report.backfilled.append(run_id)
                log.info("schedule %s: started %s%s", wf.name, run_id, " (back-filled)" if late else "",
                         extra={"workflow": wf.name, "run_id": run_id})
        cursor = fire


class Firer:
    """The worker's schedule firing: touches the database only when a fire is due."""

    def __init__(self, config: ResolvedConfig) -> None:
        self.config = config
        self.workflows = scheduled(config)
        self.next_due: datetime | None = None  # None: look now
        self._agent_ready = False

    def next_fire(self, now: datetime) -> datetime | None:
        """The earliest next fire of this config's schedules after `now`."""
        upcoming = [next(fires_after(schedule_of(wf), now)) for wf in self.workflows]
        return min(upcoming) if upcoming else None

    def fire(self, *, now: datetime | None = None) -> FireReport:
        report = FireReport()
        if not self.workflows:
            return report
        now = now or clock.now()
        if self.next_due is not None and now < self.next_due:
            return report
        if not is_latest(self.config.version):
            self.next_due = now + timedelta(seconds=5)  # a newer version's worker fires them
            return report
        if not self._agent_ready:
            ensure_schedule_agent()
            self._agent_ready = True
        for wf in self.workflows:
            try:
                fire_one(self.config, wf, now=now, report=report)
            except Exception:
                log.exception("schedule %s: firing failed; trying again", wf.name, extra={"workflow": wf.name})
                self.next_due = now + timedelta(seconds=1)
                return report
        self.next_due = self.next_fire(now)
        return report


def fire_due(config: ResolvedConfig, *, now: datetime | None = None) -> FireReport:
    """Fire every due schedule of `config` once (tests, `manage.py schedules --fire`)."""
    return Firer(config).fire(now=now)
