"""Services of a change's life that touch the engine's tables."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction

from runs.engine import clock, transitions
from runs.models import Run, RunStatus

CHANGE_WORKFLOW = "change"


@dataclass(frozen=True)
class Stamped:
    run_id: str
    pending: bool  # it was waiting or mid-advance: the caller must wake it on the new version


def stamp_version(*, run_ids: Sequence[str], version: str) -> list[Stamped]:
    """Move unfinished change runs onto `version` after a deploy, so the new worker finishes them.

    One conditional UPDATE per run inside one transaction: of two workers stamping at once, each
    run is stamped by exactly one. Runs of other workflows and ended runs are left as they are.
    """
    stamped: list[Stamped] = []
    with transaction.atomic():
        candidates = list(
            Run.objects.filter(pk__in=list(run_ids), workflow=CHANGE_WORKFLOW, status__in=transitions.UNFINISHED)
            .exclude(app_version=version)
            .values_list("pk", "status", "app_version")
        )
        for run_id, status, old_version in candidates:
            if transitions.stamp(run_id=run_id, from_version=old_version, to_version=version, now=clock.now()):
                stamped.append(Stamped(run_id=run_id, pending=status != RunStatus.QUEUED))
    return stamped
