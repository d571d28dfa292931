"""Reads of sandbox runs: a run's sandbox row, many runs' at once, and how a surface shows one."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from runs.models import Run
from runs.sandbox.models import SandboxRun


def sandbox_of(run: Run) -> SandboxRun | None:
    """The run's sandbox row, or None for a run on real drivers."""
    try:
        return run.sandbox
    except SandboxRun.DoesNotExist:
        return None


def sandboxes_of(run_ids: Iterable[str]) -> dict[str, SandboxRun]:
    """The sandbox rows of these runs (one read), by run id; a run on real drivers has none."""
    ids = list(run_ids)
    if not ids:
        return {}
    return {row.pk: row for row in SandboxRun.objects.filter(pk__in=ids).defer("books")}


def sandbox_run_ids(run_ids: Iterable[str]) -> set[str]:
    ids = list(run_ids)
    return set(SandboxRun.objects.filter(pk__in=ids).values_list("pk", flat=True)) if ids else set()


def sandbox_data(row: SandboxRun | None) -> dict[str, Any] | None:
    """A sandbox run as the API, the commands and the pages say it; None for a run on real drivers."""
    if row is None:
        return None
    checks = row.checks
    return {
        "scenario": row.scenario,
        "file": row.file,
        "checks": checks,
        "passed": row.passed if checks is not None else None,
        "failed": row.failed if checks is not None else None,
    }
