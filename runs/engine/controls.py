"""Whether the operators' controls a process holds in memory may have changed: the active pauses
(`runs.engine.pauses`) and the limits' overrides (`runs.limits.overrides`).

Each process reads them again once a second (REFRESH_SECONDS): a busy worker process spent two
transactions a second on them, 0.15-0.25 a 10-step run at two processes. A change of either (a
pause, an unpause, a limit set or reset) sends `pg_notify('sanoma_controls')` in its transaction
(`changed`), delivered when it commits. On PostgreSQL the worker's own loop LISTENs for it and keeps
a count of the changes seen in memory its forked processes share (a `Watch`, `install`ed before the
cluster forks): while that loop listens, or left its wait less than a second ago, a copy read since
the last change is still the database's, and no read is made for it; a change seen makes every
process read again at its next look (sooner than the second it took before). Where nothing watches
(SQLite, the web processes, the tests, a worker whose LISTEN failed), each copy is read again once
a second, as before. A copy is read again every VOUCHED_AT_MOST seconds however it is vouched for
(a LISTEN connection that died without a word delivers nothing).
"""
from __future__ import annotations

import multiprocessing
import time

from django.db import transaction

CHANNEL = "sanoma_controls"
VOUCHED_AT_MOST = 10.0  # seconds a copy is kept on the watch's word alone


class Watch:
    """The changes the worker's loop has seen, and whether it is listening now, in memory shared
    with the processes forked after it is made (time.monotonic() is the same clock in each)."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("fork")
        self._changes = context.RawValue("q", 0)
        self._listening = context.RawValue("b", 0)
        self._left_at = context.RawValue("d", float("-inf"))  # when the loop last stopped listening

    def changes(self) -> int:
        return int(self._changes.value)

    def changed(self) -> None:
        """A change was seen (or may have been missed: a LISTEN connection opened anew)."""
        self._changes.value += 1

    def listening(self, now: bool) -> None:
        """The loop waits on its LISTEN connection (True), or has stopped waiting (False)."""
        if not now:
            self._left_at.value = time.monotonic()
        self._listening.value = 1 if now else 0

    def vouches(self, *, changes: int, read_at: float, within: float) -> bool:
        """Whether a copy read at `read_at` (time.monotonic()), when `changes` had been seen, is
        still the database's: no change seen since, the loop listening now or less than `within`
        seconds ago, and the copy not VOUCHED_AT_MOST old."""
        now = time.monotonic()
        if self.changes() != changes or now - read_at >= VOUCHED_AT_MOST:
            return False
        return bool(self._listening.value) or now - self._left_at.value < within


_watch: Watch | None = None


def install(watch: Watch | None) -> None:
    """The watch this process (and those it forks) trusts; None: none (read once a second)."""
    global _watch
    _watch = watch


def changes() -> int:
    """The changes seen so far (taken before a read: one seen during it makes the next look read)."""
    return _watch.changes() if _watch is not None else 0


def fresh(*, changes: int, read_at: float, refresh: float) -> bool:
    """Whether a copy read at `read_at` (time.monotonic()) with `changes` seen may be used without
    a read: younger than `refresh` and no change seen since, or vouched for by the watch."""
    young = time.monotonic() - read_at < refresh
    if _watch is None:
        return young
    if young:
        return _watch.changes() == changes
    return _watch.vouches(changes=changes, read_at=read_at, within=refresh)  # it compares the changes too


def changed() -> None:
    """Tell the listening workers a control changed, when the caller's transaction commits."""
    connection = transaction.get_connection()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, '')", [CHANNEL])
