"""The runtime's clock. Scenarios move it forward instead of waiting on the wall clock."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

_lock = threading.Lock()
_offset = timedelta(0)


def now() -> datetime:
    return datetime.now(UTC) + _offset


def now_ms() -> int:
    return to_ms(now())


def to_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def advance(delta: timedelta) -> None:
    """Move this process's clock forward (scenarios only: real runs never call it)."""
    global _offset
    if delta < timedelta(0):
        raise ValueError("the clock only moves forward")
    with _lock:
        _offset += delta


def reset() -> None:
    global _offset, _sleeper
    with _lock:
        _offset = timedelta(0)
        _sleeper = time.sleep


# The engine's waits inside an advance (retry delays, ledger write retries) go through `sleep`,
# so a test can see what the engine waited for without spending the time.
_sleeper: Callable[[float], None] = time.sleep


def sleep(seconds: float) -> None:
    """Wait `seconds` of wall-clock time (a retry's delay)."""
    _sleeper(seconds)


@contextmanager
def sleeping_with(sleeper: Callable[[float], None]) -> Iterator[None]:
    """Route the engine's waits to `sleeper` in this process while the block runs."""
    global _sleeper
    before = _sleeper
    _sleeper = sleeper
    try:
        yield
    finally:
        _sleeper = before
