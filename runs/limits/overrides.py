"""The operators' overrides in force, read from their table at most once a second per process (a
change made in this process is seen at once: `forget`), like the pauses."""
from __future__ import annotations

import threading
import time

from runs.limits.models import LimitOverride

REFRESH_SECONDS = 1.0

_lock = threading.Lock()
_current: dict[str, LimitOverride] = {}
_read_at = float("-inf")


def current() -> dict[str, LimitOverride]:
    global _current, _read_at
    with _lock:
        if time.monotonic() - _read_at >= REFRESH_SECONDS:
            _current = {o.target: o for o in LimitOverride.objects.all()}
            _read_at = time.monotonic()
        return _current


def forget() -> None:
    """Read the overrides afresh on the next look."""
    global _read_at
    with _lock:
        _read_at = float("-inf")
