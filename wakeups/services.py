"""Writes of the wakeups surfaces."""
from __future__ import annotations

from connectors.errors import InvalidInput
from runs import services
from runs.config.resolution import ResolvedConfig
from runs.engine import clock
from runs.models import Run
from wakeups.schedules import SCHEDULE_AGENT, ensure_schedule_agent, run_id_for, scheduled


def run_now(*, config: ResolvedConfig, workflow: str) -> Run:
    """Start a scheduled workflow now, as the `schedule` agent, id `<workflow>@<now>`."""
    if workflow not in {wf.name for wf in scheduled(config)}:
        raise InvalidInput(f"No scheduled workflow {workflow!r}")
    ensure_schedule_agent()
    return services.start(workflow=workflow, input={}, started_by=SCHEDULE_AGENT,
                          run_id=run_id_for(workflow, clock.now()), config=config)
