"""A worker's start and restart, as the layers above the engine see them.

- a layer (the change workflow's, in `changes`) asks to be told when a worker has started on a
  config with its extension's `worker_start` (`runs.extensions`): that is when change runs are
  stamped onto the new version. `worker_started(config)` calls each; one that fails is logged,
  the worker goes on.
- `request_restart(why)`: a deploy on this machine asks every worker of this instance (same
  SANOMA_VAR_DIR) to stop and be started again on the new code. The request is a file, so it
  reaches a worker whatever database it uses; a worker looks at it on each turn of its loop
  (`restart_requested(since=)`) and exits with `RESTART_EXIT`, which the supervisor and the demo
  take as "start me again now" (a plain `manage.py worker` under systemd restarts with
  `Restart=always`).
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from django.conf import settings

from runs.extensions import providing

log = logging.getLogger("sanoma.worker")

RESTART_EXIT = 75  # EX_TEMPFAIL: "stopped on purpose; start again"
RESTART_FILE = "restart-requested.json"

def worker_started(config: Any) -> list[str]:
    """Call every extension's `worker_start`; answers what failed (logged too), so the worker can
    say so and go on."""
    failed: list[str] = []
    for name, hook in providing("worker_start"):
        try:
            hook(config)
        except Exception as err:  # one layer's failure must not keep the worker from running
            log.exception("the worker start hook %s failed", name)
            failed.append(f"{name}: {type(err).__name__}: {err}")
    return failed


def _file() -> Path:
    return Path(settings.VAR_DIR) / RESTART_FILE


def request_restart(*, why: str, revision: str = "") -> None:
    """Ask this instance's workers to start again (on the code now in the live root)."""
    path = _file()
    path.parent.mkdir(parents=True, exist_ok=True)
    body = json.dumps({"why": why, "revision": revision, "at": time.time()})
    fd, tmp = tempfile.mkstemp(prefix=".restart.", dir=path.parent)
    with os.fdopen(fd, "w") as handle:
        handle.write(body)
    os.replace(tmp, path)  # atomic: a worker reads the whole request or none


def restart_requested(*, since: float) -> dict[str, Any] | None:
    """The restart asked for after `since` (epoch seconds), or None. Asked on every turn of a
    worker's loop: a request written before `since` is not read again (its file's time says so)."""
    path = _file()
    try:
        if path.stat().st_mtime < since - 1:  # written before then (a second's slack for coarse clocks)
            return None
        body = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None
    at = body.get("at")
    return body if isinstance(at, (int, float)) and at > since else None


__all__ = ["RESTART_EXIT", "request_restart", "restart_requested", "worker_started"]
