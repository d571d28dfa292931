"""The worker company's harness: the process helpers (`runs.tests.processes`) with this folder as
the config root. Not part of the config root: the worker never imports this file (only
`sanoma_config.py` and `workflows/*.py` are loaded), the tests do."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from runs.tests.processes import READY_LINE, REPO, Worker, database_url, group_members
from runs.tests.processes import worker_env as _worker_env

ROOT = Path(__file__).resolve().parent


def worker_env(*, db_url: str, var_dir: Path, version: str, **extra: Any) -> dict[str, str]:
    return _worker_env(db_url=db_url, var_dir=var_dir, version=version, root=ROOT, **extra)


__all__ = ["READY_LINE", "REPO", "ROOT", "Worker", "database_url", "group_members", "worker_env"]
