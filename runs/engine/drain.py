"""Driving runs in this process, without a cluster: the scenarios' engine and the tests'.

The same engine as the worker's: due sleepers wake through the sweep's transition, queued runs
advance through `advance`. Only the dispatch differs: runs are advanced here, one after another,
instead of by django-q2 tasks (the tasks enqueued meanwhile are left for a cluster, or rolled
back with the scenario's transaction).
"""
from __future__ import annotations

from runs.config.resolution import ResolvedConfig
from runs.engine import clock, transitions
from runs.engine.advance import advance
from runs.engine.pauses import PAUSED
from runs.models import Run, RunStatus

WAKE_BATCH = 1000


def drain(config: ResolvedConfig, *, worker_id: str = "in-process", rounds: int = 1000) -> int:
    """Advance every runnable run of the config's version until none is: due sleepers wake,
    queued runs advance. Returns how many advances ran."""
    advanced = 0
    for _ in range(rounds):
        transitions.wake_due_sleepers(version=config.version, now=clock.now(), limit=WAKE_BATCH)
        runnable = list(
            Run.objects.filter(status=RunStatus.QUEUED, app_version=config.version)
            .exclude(waiting_for__startswith=PAUSED).order_by("created_at").values_list("pk", flat=True)
        )
        if not runnable:
            return advanced
        for run_id in runnable:
            advance(run_id, worker_id=worker_id, config=config)
            advanced += 1
    raise RuntimeError(f"runs kept becoming runnable after {rounds} rounds")
