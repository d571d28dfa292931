"""Riding out a dropped database connection while the engine writes.

When the connection drops under one of the engine's writes (a database restart, a failover, a
proxy cutting idle sockets), retrying on the same connection only fails again: the driver's
socket is gone. `ride_out` is the one place that handles it, for every write an advance makes (a
call's checkpoint and intent, a reconcile's answer, a wait's start, a message read, an approval
asked or decided, a child started, the run's end): it tells a lost connection from an error the
database answered, drops the dead connection so Django opens a new one on the next query, looks
whether the write had committed with only its answer lost, and writes again, on a backoff that
ends before the run's lease would. Past that it raises `Unreachable`: the advance stops without
failing the run, and another worker takes the run over once its lease runs out.

Only on the error path: a write that goes through costs nothing more.
"""
from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.db import DatabaseError, InterfaceError, OperationalError, connection

from runs.engine import clock

log = logging.getLogger("sanoma.engine")
T = TypeVar("T")


@functools.cache
def _error_classes() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """The errors of a lost connection, Django's and those psycopg raises itself (Django wraps those of
    cursors and connects); then psycopg's OperationalError. Imported on the error path only: a
    process on SQLite never imports psycopg."""
    try:
        from psycopg import InterfaceError as PgInterfaceError
        from psycopg import OperationalError as PgOperationalError
    except ImportError:  # pragma: no cover - psycopg is pinned
        return (InterfaceError, OperationalError), ()
    return (InterfaceError, OperationalError, PgInterfaceError, PgOperationalError), (PgOperationalError,)


# SQLSTATEs of a connection the server ended: class 08 (connection exception), and the server
# shutting down or restarting (admin_shutdown, crash_shutdown, cannot_connect_now).
_CONNECTION_STATES = ("08",)
_SHUTDOWN_STATES = ("57P01", "57P02", "57P03")

# The waits between tries once the connection dropped: short first (a blip), then a second
# apart until the deadline (a restart takes a few seconds).
BACKOFF = (0.05, 0.1, 0.2, 0.4, 0.8)
BACKOFF_CAP = 1.0


def connection_lost(err: BaseException) -> bool:
    """Whether `err` came from a connection that is gone (dropped, closed, or not reopened), as
    opposed to an answer of the database (a constraint, a lock timeout, a bad value)."""
    connection_errors, pg_operational = _error_classes()
    if not isinstance(err, connection_errors):
        return False
    # The server said it is closing this connection (a restart, a failover, an administrator's
    # pg_terminate_backend): the socket may not have reached its end yet, so the driver still
    # reads the connection as open, but nothing more will go through it.
    cause = err if getattr(err, "sqlstate", None) else err.__cause__
    state = getattr(cause, "sqlstate", None) or ""
    if state.startswith(_CONNECTION_STATES) or state in _SHUTDOWN_STATES:
        return True
    # The driver's own error with no SQLSTATE: the server never answered (the socket closed while
    # a result was read, a send failed, a connect was refused). Read from the error, not from the
    # connection: leaving a transaction, Django may already have opened a new, healthy one.
    pg_error = err if isinstance(err, pg_operational) else err.__cause__
    if isinstance(pg_error, pg_operational) and not getattr(pg_error, "sqlstate", None):
        return True
    raw = connection.connection
    if raw is None:
        return True  # nothing is connected: the connection was discarded and reopening it failed
    return bool(getattr(raw, "closed", False) or getattr(raw, "broken", False))


def can_reconnect() -> bool:
    """A new connection only helps outside a transaction: inside one, the work before the drop is
    lost with the connection, and carrying on would commit the rest without it."""
    return not connection.in_atomic_block


def discard() -> None:
    """Drop the dead connection; Django opens a new one on the next query."""
    try:
        connection.close()
    except DatabaseError:
        pass  # closing a broken socket may complain; it is gone either way
    # `close` keeps the connection object when it thinks a transaction is open; this one is not.
    connection.connection = None
    connection.closed_in_transaction = False
    connection.needs_rollback = False


def unsaved(*objs: Any) -> None:
    """Make rows written by a try that rolled back with the connection new again: their ids and
    Django's "already saved" mark are gone with the transaction, so the next try inserts them (a
    ledger record refuses to be saved twice otherwise)."""
    for obj in objs:
        if obj is not None:
            obj.pk = None
            obj._state.adding = True


class Backoff:
    """The waits before each new try, until `deadline` (time.monotonic()) is reached."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.started = time.monotonic()
        self.tries = 0

    def next_delay(self) -> float | None:
        """How long to wait before the next try; None when the deadline leaves no time for one."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            return None
        delay = BACKOFF[self.tries] if self.tries < len(BACKOFF) else BACKOFF_CAP
        self.tries += 1
        return min(delay, left)

    def elapsed(self) -> float:
        return time.monotonic() - self.started


class Unreachable(BaseException):
    """The database stayed unreachable until the deadline: the advance stops here, writing nothing
    more, and leaves the run to be taken over once its lease runs out. A BaseException so that a
    workflow's `except Exception` cannot swallow it and carry on past a write that never happened."""


def ride_out(write: Callable[[], T], *, deadline: Callable[[], float], what: str,
             landed: Callable[[], T | None] | None = None) -> T:
    """`write()`'s result, writing again on a new connection while the old one is lost.

    `deadline()` (time.monotonic()) is asked at the first drop: no try starts after it. `landed()`
    is asked before each new try: the result when the write before the drop had committed (its
    answer was lost with the connection), None when it has not, so a write that is not idempotent
    is never made twice. An error the database answered is raised as it is.
    """
    backoff: Backoff | None = None
    while True:
        try:
            if backoff is not None and landed is not None:
                found = landed()
                if found is not None:
                    log.info("%s: the write before the drop had landed", what)
                    return found
            result = write()
            if backoff is not None:
                log.warning("%s: written on a new connection after %.1f s, try %d", what, backoff.elapsed(),
                            backoff.tries + 1)
            return result
        except Exception as err:
            if not (connection_lost(err) and can_reconnect()):
                raise
            discard()
            if backoff is None:
                backoff = Backoff(deadline=deadline())
            delay = backoff.next_delay()
            if delay is None:
                raise Unreachable(f"{what}: the database stayed unreachable for {backoff.elapsed():.1f} s "
                                  f"({str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__})"
                                  ) from err
            log.warning("%s: the database connection was lost (%s); trying again on a new one", what,
                        str(err).strip().split("\n")[0])
            clock.sleep(delay)
