"""The runtime's clock. Scenarios move it forward instead of waiting on the wall clock."""
from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

_lock = threading.Lock()
_offset = timedelta(0)


def now() -> datetime:
    return datetime.now(timezone.utc) + _offset


def now_ms() -> int:
    return to_ms(now())


def to_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def advance(delta: timedelta) -> None:
    """Move this process's clock forward (scenarios only: real runs never call it)."""
    global _offset
    if delta < timedelta(0):
        raise ValueError("the clock only moves forward")
    with _lock:
        _offset += delta


def reset() -> None:
    global _offset
    with _lock:
        _offset = timedelta(0)
