"""Named fault-injection points at the engine's commit boundaries, for tests.

`arm("ledger.append", error, times=1)` makes the next pass through that point raise `error`.
Points: `step.commit` (inside a step's transaction, before its rows are written),
`after_driver_call` (the vendor replied; nothing recorded yet).
"""
from __future__ import annotations

import threading

_lock = threading.Lock()
_armed: dict[str, list[BaseException]] = {}


def arm(name: str, error: BaseException, *, times: int = 1) -> None:
    with _lock:
        _armed.setdefault(name, []).extend([error] * times)


def clear() -> None:
    with _lock:
        _armed.clear()


def point(name: str) -> None:
    if not _armed:
        return
    with _lock:
        queue = _armed.get(name)
        error = queue.pop(0) if queue else None
    if error is not None:
        raise error
