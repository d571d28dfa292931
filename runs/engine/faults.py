"""Named fault-injection points at the engine's commit boundaries, for tests.

`arm(FaultPoint.STEP_COMMIT, error, times=1)` makes the next pass through that point raise
`error`. Arming a point the engine does not have raises at once, so a test cannot arm a fault
that never fires.
"""
from __future__ import annotations

import threading
from enum import StrEnum


class FaultPoint(StrEnum):
    STEP_COMMIT = "step.commit"  # inside a step's transaction, before its rows are written
    AFTER_DRIVER_CALL = "after_driver_call"  # the vendor replied; nothing is recorded yet


_lock = threading.Lock()
_armed: dict[FaultPoint, list[BaseException]] = {}


def arm(name: FaultPoint | str, error: BaseException, *, times: int = 1) -> None:
    try:
        point_ = FaultPoint(name)
    except ValueError:
        known = ", ".join(p.value for p in FaultPoint)
        raise ValueError(f"No fault point {name!r}; the engine has: {known}") from None
    if times < 1:
        raise ValueError(f"times must be at least 1; got {times}")
    with _lock:
        _armed.setdefault(point_, []).extend([error] * times)


def clear() -> None:
    with _lock:
        _armed.clear()


def point(name: FaultPoint) -> None:
    if not _armed:
        return
    with _lock:
        queue = _armed.get(name)
        error = queue.pop(0) if queue else None
    if error is not None:
        raise error
