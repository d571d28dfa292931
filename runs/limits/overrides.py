"""The operators' overrides in force, read from their table at most once a second per process (a
change made in this process is seen at once: `forget`), like the pauses.

`known` is what was read last, with no query: a call of an operation that declares no limit looks
there only (`runs.limits.gate.overridden`); the engine reads the table afresh (`current`) at the
start of each segment and on each limited call, once a second at most. In a worker on PostgreSQL,
a copy no change has been seen since is kept without a read while the worker's loop listens for
changes (`runs.engine.controls`); a run queued since the last read still reads them afresh.
"""
from __future__ import annotations

import threading
import time
from datetime import datetime

from runs.engine import controls
from runs.limits.models import LimitOverride

REFRESH_SECONDS = 1.0
CLOCK_SKEW_SECONDS = 0.5  # a run queued up to this long after a read may have been woken by a change it missed

_lock = threading.Lock()
_current: dict[str, LimitOverride] = {}
_read_at = float("-inf")  # time.monotonic() of the last read
_read_wall = float("-inf")  # time.time() of the last read
_read_changes = 0  # the controls' changes seen when they were read (runs.engine.controls)


def current(*, read_after: datetime | None = None) -> dict[str, LimitOverride]:
    """The overrides by target, read again when the last read is a second old (and no watch vouches
    for it), or was made before `read_after` (a run queued since: an operator's change may have
    woken it)."""
    global _current, _read_at, _read_wall, _read_changes
    with _lock:
        stale = not controls.fresh(changes=_read_changes, read_at=_read_at, refresh=REFRESH_SECONDS)
        if not stale and read_after is not None:
            stale = _read_wall <= read_after.timestamp() + CLOCK_SKEW_SECONDS
        if stale:
            seen = controls.changes()
            _current = {o.target: o for o in LimitOverride.objects.all()}
            _read_at, _read_wall, _read_changes = time.monotonic(), time.time(), seen
        return _current


def known() -> dict[str, LimitOverride]:
    """The overrides as last read (no query)."""
    return _current


def forget() -> None:
    """Read the overrides afresh on the next look."""
    global _read_at, _read_wall
    with _lock:
        _read_at = _read_wall = float("-inf")
