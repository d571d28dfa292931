"""Reads for the surfaces: each scheduled workflow with its next fires, last fire and run, skips and
back-fills."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from runs.config.resolution import ResolvedConfig
from runs.engine import clock
from runs.models import Run
from wakeups.models import ScheduleState
from wakeups.schedules import next_fires, schedule_of, scheduled


@dataclass
class ScheduleView:
    workflow: str
    trigger: str
    timezone: str
    overlap: str
    catchup_seconds: float
    next_fires: list[datetime]
    next_fires_local: list[datetime]
    state: ScheduleState | None
    last_run: Run | None

    def as_dict(self) -> dict[str, Any]:
        state = self.state
        return {
            "workflow": self.workflow, "trigger": self.trigger, "timezone": self.timezone, "overlap": self.overlap,
            "catchup_seconds": self.catchup_seconds,
            "next_fires": [f.isoformat() for f in self.next_fires],
            "next_fires_local": [f.isoformat() for f in self.next_fires_local],
            "last_fire_at": state.last_fire_at.isoformat() if state and state.last_fire_at else None,
            "last_run": {"id": self.last_run.id, "status": self.last_run.status} if self.last_run else None,
            "skipped": state.skipped if state else 0, "backfilled": state.backfilled if state else 0,
            "missed": state.missed if state else 0,
        }


def schedules(config: ResolvedConfig, *, count: int = 5, now: datetime | None = None) -> list[ScheduleView]:
    now = now or clock.now()
    states = {s.workflow: s for s in ScheduleState.objects.all()}
    views = []
    for wf in scheduled(config):
        schedule = schedule_of(wf)
        fires = next_fires(schedule, now, count)
        state = states.get(wf.name)
        last = Run.objects.filter(pk=state.last_run_id).first() if state and state.last_run_id else None
        tz = ZoneInfo(schedule.timezone)
        views.append(ScheduleView(
            workflow=wf.name, trigger=schedule.cron or f"every {schedule.every:g} s", timezone=schedule.timezone,
            overlap=schedule.overlap, catchup_seconds=schedule.catchup, next_fires=fires,
            next_fires_local=[f.astimezone(tz) for f in fires], state=state, last_run=last))
    return views
