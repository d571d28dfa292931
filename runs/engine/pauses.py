"""Which pauses hold the engine now: read from the pause table, cached briefly per process.

A call checks this before it is decided, on the hot path, so the active pauses are read at most
once a second per process (there are few, and most of the time none); a pause or an unpause made
in this process is seen at once (`forget`), one made elsewhere within a second. In a worker on
PostgreSQL, a copy no change has been seen since is kept without a read while the worker's loop
listens for changes (`runs.engine.controls`).
"""
from __future__ import annotations

import threading
import time

from connectors.operations import Operation
from runs.engine import controls
from runs.models import Pause, PauseKind

REFRESH_SECONDS = 1.0
PAUSED = "paused"  # the prefix of `waiting_for` for a run a pause holds: "paused <target>"

_lock = threading.Lock()
_active: dict[tuple[str, str], Pause] = {}
_read_at = float("-inf")
_read_changes = 0  # the controls' changes seen when they were read (runs.engine.controls)


def _current() -> dict[tuple[str, str], Pause]:
    global _active, _read_at, _read_changes
    with _lock:
        if not controls.fresh(changes=_read_changes, read_at=_read_at, refresh=REFRESH_SECONDS):
            seen = controls.changes()
            _active = {(p.kind, p.target): p for p in Pause.objects.filter(unpaused_at__isnull=True)}
            _read_at, _read_changes = time.monotonic(), seen
        return _active


def forget() -> None:
    """Read the pauses afresh on the next look (after a pause or unpause in this process)."""
    global _read_at
    with _lock:
        _read_at = float("-inf")


def holding_call(op: Operation) -> Pause | None:
    """The pause that holds a call of `op`: its operation's, else its connector's; None."""
    active = _current()
    if not active:
        return None
    return active.get((PauseKind.OPERATION, op.id)) or active.get((PauseKind.CONNECTOR, op.vendor))


def holding_start(workflow: str) -> Pause | None:
    """The pause that keeps new runs of `workflow` from starting; None."""
    active = _current()
    return active.get((PauseKind.WORKFLOW, workflow)) if active else None


def waiting_for(pause: Pause) -> str:
    return f"{PAUSED} {pause.target}"
