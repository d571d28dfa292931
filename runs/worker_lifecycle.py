"""A worker's start and restart, as the layers above the engine see them.

- `on_worker_start(hook)`: a layer (the change workflow's, in `changes`) asks to be told when a
  worker has started on a config: that is when change runs are stamped onto the new version.
  `worker_started(config)` calls each hook; one that fails is logged, the worker goes on.
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
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

log = logging.getLogger("sanoma.worker")

RESTART_EXIT = 75  # EX_TEMPFAIL: "stopped on purpose; start again"
RESTART_FILE = "restart-requested.json"

_lock = threading.Lock()
_hooks: dict[str, Callable[[Any], Any] | str] = {}


def on_worker_start(name: str, hook: Callable[[Any], Any] | str) -> None:
    """Call `hook(config)` after a worker started on `config` (a function, or its dotted path, found
    when called: an app's setup may name a function of a module that loads its models); registering
    a name again replaces it."""
    if not (callable(hook) or (isinstance(hook, str) and "." in hook)):
        raise TypeError(f"worker start hook {name!r} must be a function of the resolved config, or its dotted path")
    with _lock:
        _hooks[name] = hook


def worker_started(config: Any) -> list[str]:
    """Call every hook; answers what failed (logged too), so the worker can say so and go on."""
    with _lock:
        hooks = list(_hooks.items())
    failed: list[str] = []
    for name, hook in hooks:
        try:
            (import_string(hook) if isinstance(hook, str) else hook)(config)
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


__all__ = ["RESTART_EXIT", "on_worker_start", "request_restart", "restart_requested", "worker_started"]
