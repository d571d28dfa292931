"""Riding out a dropped database connection while a step's checkpoint is written.

When the vendor has acted and the connection drops before its checkpoint is written (a database
restart, a failover, a proxy cutting idle sockets), retrying on the same connection only fails
again: the driver's socket is gone. Here the engine tells a lost connection from an error the
database answered, drops the dead connection so Django opens a new one on the next query, and
waits between tries on a backoff that ends when the run's lease would.

Only on the error path: a checkpoint that goes through costs nothing more.
"""
from __future__ import annotations

import time

from django.db import DatabaseError, InterfaceError, OperationalError, connection

try:  # the errors psycopg raises itself (Django wraps those of cursors and connects)
    from psycopg import InterfaceError as _PgInterfaceError
    from psycopg import OperationalError as _PgOperationalError

    _CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
        InterfaceError, OperationalError, _PgInterfaceError, _PgOperationalError)
except ImportError:  # pragma: no cover - psycopg is pinned
    _CONNECTION_ERRORS = (InterfaceError, OperationalError)

# The waits between tries once the connection dropped: short first (a blip), then a second
# apart until the deadline (a restart takes a few seconds).
BACKOFF = (0.05, 0.1, 0.2, 0.4, 0.8)
BACKOFF_CAP = 1.0


def connection_lost(err: BaseException) -> bool:
    """Whether `err` came from a connection that is gone (dropped, closed, or not reopened), as
    opposed to an answer of the database (a constraint, a lock timeout, a bad value)."""
    if not isinstance(err, _CONNECTION_ERRORS):
        return False
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
