"""Named fault-injection points at the engine's commit boundaries, for tests only.

`arm(FaultPoint.STEP_COMMIT, error, times=1)` makes the next pass through that point raise
`error`; arming it with a function instead (`arm(point, drop_connection)`) runs that function
there (a test cutting the database connection right before a write). Arming a point the engine
does not have raises at once, so a test cannot arm a fault that never fires. In production
nothing is armed and every point is a no-op (one check of an empty dict).
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from enum import StrEnum


class FaultPoint(StrEnum):
    STEP_COMMIT = "step.commit"  # inside a step's transaction, before its rows are written
    AFTER_DRIVER_CALL = "after_driver_call"  # the vendor replied; nothing is recorded yet
    # Right before each kind of engine write (the first try only: a fault fires once per arming).
    BEFORE_INTENT = "before.op.intent"  # a call to a vendor that ignores keys is about to be sent
    BEFORE_RESOLVED = "before.op.resolved"  # the reconcile read answered
    BEFORE_WAIT = "before.wait"  # a wait's start (message or child run)
    BEFORE_MESSAGE_READ = "before.message.read"  # a message is read
    BEFORE_APPROVAL = "before.approval.requested"  # an approval is asked
    BEFORE_DECISION = "before.approval.decided"  # a decision message is applied
    BEFORE_CHILD = "before.run.child_started"  # a child run is started
    BEFORE_CALL = "before.op.called"  # a call's checkpoint
    BEFORE_END = "before.run.end"  # the run finishes or fails
    BEFORE_LOAD = "before.load"  # a claimed run's history is about to be read (not a write)


_lock = threading.Lock()
Fault = BaseException | Callable[[], None]
_armed: dict[FaultPoint, list[Fault]] = {}


def arm(name: FaultPoint | str, error: Fault, *, times: int = 1) -> None:
    try:
        point_ = FaultPoint(name)
    except ValueError:
        known = ", ".join(p.value for p in FaultPoint)
        raise ValueError(f"No fault point {name!r}; the engine has: {known}") from None
    if not isinstance(error, BaseException) and not callable(error):
        raise TypeError(f"arm takes an exception or a function to run; got {type(error).__name__}")
    if times < 1:
        raise ValueError(f"times must be at least 1; got {times}")
    with _lock:
        _armed.setdefault(point_, []).extend([error] * times)


def any_armed() -> bool:
    """Whether a test armed anything: the engine's hot path skips naming its points otherwise."""
    return bool(_armed)


def clear() -> None:
    with _lock:
        _armed.clear()


def point(name: FaultPoint) -> None:
    if not _armed:
        return
    with _lock:
        queue = _armed.get(name)
        error = queue.pop(0) if queue else None
    if isinstance(error, BaseException):
        raise error
    if error is not None:
        error()
