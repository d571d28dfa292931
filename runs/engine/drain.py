"""Driving runs in this process, without a cluster: the scenarios' engine, the tests', and a
command's `--here`.

The same engine as the worker's: due sleepers wake through the sweep's transition, queued runs
advance through `advance`. Only the dispatch differs: runs are advanced here, one after another,
instead of by django-q2 tasks (the tasks enqueued meanwhile are left for a cluster, or rolled
back with the scenario's transaction).

`family=<run id>` keeps to that run and the runs it started (`ctx.start_run`, and theirs): a
command running its own run here does not run anyone else's queued runs.
"""
from __future__ import annotations

from django.db.models import Q

from runs.config.resolution import ResolvedConfig
from runs.engine import clock, transitions
from runs.engine.advance import advance
from runs.engine.pauses import PAUSED
from runs.models import Run, RunStatus

WAKE_BATCH = 1000


def family_of(run_id: str) -> list[str]:
    """The run and every run it started, and theirs (ended ones included), parents first."""
    found = [run_id]
    parents = [run_id]
    while parents:
        parents = list(Run.objects.filter(parent_id__in=parents).order_by("created_at").values_list("pk", flat=True))
        found += parents
    return found


def drain(config: ResolvedConfig, *, worker_id: str = "in-process", rounds: int = 1000,
          family: str | None = None) -> int:
    """Advance every runnable run of the config's workflow versions (or of `family`) until none is: due
    sleepers wake, queued runs advance. Returns how many advances ran."""
    advanced = 0
    for _ in range(rounds):
        scope = Q(app_version__in=config.owned_versions)
        if family is not None:
            members = family_of(family)
            scope &= Q(pk__in=members)
            due = (Run.objects.filter(scope, status=RunStatus.WAITING, wake_at__lte=clock.now())
                   .values_list("pk", flat=True))
            for run_id in due:
                transitions.wake_due(run_id=run_id, now=clock.now())
        else:
            transitions.wake_due_sleepers(versions=config.owned_versions, now=clock.now(), limit=WAKE_BATCH)
        runnable = list(
            Run.objects.filter(scope, status=RunStatus.QUEUED)
            .exclude(waiting_for__startswith=PAUSED).order_by("created_at").values_list("pk", flat=True)
        )
        if not runnable:
            return advanced
        for run_id in runnable:
            advance(run_id, worker_id=worker_id, config=config)
            advanced += 1
    raise RuntimeError(f"runs kept becoming runnable after {rounds} rounds")


__all__ = ["drain", "family_of"]
