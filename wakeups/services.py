"""Writes of the wakeups surfaces."""
from __future__ import annotations

from django.db import transaction

from connectors.errors import InvalidInput
from runs import services
from runs.config.resolution import ResolvedConfig
from runs.engine import clock
from runs.models import Run
from wakeups.models import ScheduleState
from wakeups.schedules import SCHEDULE_AGENT, ensure_schedule_agent, initial_cursor, run_id_for, scheduled


def run_now(*, config: ResolvedConfig, workflow: str) -> Run:
    """Start a scheduled workflow now, as the `schedule` agent, id `<workflow>@<now>`, and make it the
    schedule's last run (what the surfaces show and what `overlap: skip` looks at). The fire cursor
    does not move: the schedule's own fires and back-fills are not affected."""
    if workflow not in {wf.name for wf in scheduled(config)}:
        raise InvalidInput(f"No scheduled workflow {workflow!r}")
    ensure_schedule_agent()
    now = clock.now()
    with transaction.atomic():
        run = services.start(workflow=workflow, input={}, started_by=SCHEDULE_AGENT,
                             run_id=run_id_for(workflow, now), config=config)
        ScheduleState.objects.get_or_create(pk=workflow, defaults={"last_fire_at": initial_cursor(now)})
        ScheduleState.objects.filter(pk=workflow).update(last_run_id=run.id, updated_at=now)
    return run
