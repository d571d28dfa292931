"""Replay tests: prove recorded runs against a tree of the company's code (`manage.py replay`).

Which runs (`select_runs`): the runs named, or the unfinished runs of a workflow, or every
unfinished run; with `ended`, the runs that ended too (their whole history must replay). Their
records can be written out as fixtures (`export_fixtures`) that a company's CI proves against
every edit without a database of runs (`read_fixtures`). Nothing here writes to the database.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runs.config.resolution import ResolvedConfig
from runs.engine.proof import PARKED_STATUSES, Proof, prove_recorded
from runs.engine.recorded import Recorded, load_records
from runs.models import Run


class ReplayInputError(ValueError):
    """What was asked of a replay cannot be done (an unknown run or workflow, a missing folder, a
    fixture that is not one): the message names it."""


def select_runs(*, run_ids: Sequence[str] = (), workflow: str | None = None, ended: bool = False,
                config: ResolvedConfig | None = None) -> list[Run]:
    """The runs to prove, oldest first. A run named is proven whatever its state; a workflow's
    runs (or every run) are the unfinished ones, and with `ended` the ended ones too. A workflow
    is unknown when neither `config` has it nor any run was of it."""
    if run_ids:
        found = {run.pk: run for run in Run.objects.filter(pk__in=list(run_ids))}
        missing = [run_id for run_id in run_ids if run_id not in found]
        if missing:
            raise ReplayInputError(f"no run {', '.join(missing)}")
        return [found[run_id] for run_id in dict.fromkeys(run_ids)]
    runs = Run.objects.all() if ended else Run.objects.filter(status__in=PARKED_STATUSES)
    if workflow is not None:
        known = (config is not None and workflow in config.workflows) or Run.objects.filter(workflow=workflow).exists()
        if not known:
            shown = f"; its workflows are {', '.join(sorted(config.workflows))}" if config is not None else ""
            raise ReplayInputError(f"no workflow {workflow} in the code, and no run of it{shown}")
        runs = runs.filter(workflow=workflow)
    return list(runs.order_by("created_at", "id"))


def export_fixtures(*, runs: Sequence[Run], folder: Path) -> list[Path]:
    """Write each run's record as `<folder>/<run id>.json` (the folder is made); the files written."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ReplayInputError(f"{folder} is not a folder")
    if not folder.parent.is_dir():
        raise ReplayInputError(f"{folder.parent} (the folder to export into) does not exist")
    folder.mkdir(exist_ok=True)
    written = []
    for recorded in load_records(runs):
        path = folder / f"{recorded.run.pk}.json"
        path.write_text(json.dumps(recorded.as_json(), indent=1, sort_keys=True, default=str) + "\n")
        written.append(path)
    return written


def read_fixtures(*, folder: Path, run_ids: Sequence[str] = (), workflow: str | None = None) -> list[Recorded]:
    """The recorded runs in `folder` (each `*.json`), filtered as `select_runs` filters runs."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ReplayInputError(f"no folder {folder} to read fixtures from")
    recorded: list[Recorded] = []
    for path in sorted(folder.glob("*.json")):
        try:
            data: Any = json.loads(path.read_text())
            recorded.append(Recorded.from_json(data))
        except (OSError, UnicodeDecodeError, ValueError) as err:
            raise ReplayInputError(f"{path} is not a recorded run: {err}") from None
    if not recorded:
        raise ReplayInputError(f"{folder} holds no recorded runs (*.json written by replay --export)")
    if run_ids:
        held = {r.run.pk: r for r in recorded}
        missing = [run_id for run_id in run_ids if run_id not in held]
        if missing:
            raise ReplayInputError(f"no run {', '.join(missing)} among the fixtures in {folder}")
        return [held[run_id] for run_id in dict.fromkeys(run_ids)]
    if workflow is not None:
        recorded = [r for r in recorded if r.run.workflow == workflow]
        if not recorded:
            raise ReplayInputError(f"no run of workflow {workflow} among the fixtures in {folder}")
    return recorded


def prove_fixtures(*, config: ResolvedConfig, recorded: Sequence[Recorded]) -> list[Proof]:
    return [prove_recorded(recorded=one, config=config) for one in recorded]


def report(*, tree: Path, config: ResolvedConfig, proofs: Sequence[Proof]) -> dict[str, Any]:
    """What `replay --json` prints."""
    return {"tree": str(tree), "version": config.version,
            "migrates": sum(1 for p in proofs if p.migrates), "pinned": sum(1 for p in proofs if not p.migrates),
            "runs": [p.as_json() for p in proofs]}
