"""PostgreSQL's timeouts (`SANOMA_DB_STATEMENT_TIMEOUT_SECONDS`, `SANOMA_DB_IDLE_IN_TRANSACTION_SECONDS`,
set on every connection of the site and the workers when it opens) lifted for long admin work.

A migration that builds an index on a large table, or `ledger verify` reading every chain, may
rightly take longer than any statement of the site or a worker should; they lift the statement
timeout on their own connection (`lifted`), and migrate does it for its whole run (`connect`: the
`pre_migrate` signal lifts it, `post_migrate` sets it back). SQLite has no such timeouts: nothing
happens there.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.signals import post_migrate, pre_migrate


def _postgresql(connection: BaseDatabaseWrapper) -> bool:
    return connection.vendor == "postgresql"


def lift(connection: BaseDatabaseWrapper) -> None:
    """No statement timeout on this connection until `restore` (its session's setting)."""
    if _postgresql(connection):
        with connection.cursor() as cursor:
            cursor.execute("SET statement_timeout = 0")


def restore(connection: BaseDatabaseWrapper) -> None:
    """The statement timeout the connection opened with, again."""
    if _postgresql(connection) and connection.connection is not None:
        with connection.cursor() as cursor:
            cursor.execute("RESET statement_timeout")


@contextmanager
def lifted(using: str = "default") -> Iterator[None]:
    """Within the block, statements on `using` may run as long as they need."""
    connection = connections[using]
    lift(connection)
    try:
        yield
    finally:
        restore(connection)


def _before_migrate(*, using: str = "default", **kwargs: Any) -> None:
    lift(connections[using])


def _after_migrate(*, using: str = "default", **kwargs: Any) -> None:
    restore(connections[using])


def connect() -> None:
    """Migrations run without the statement timeout (called once, from the runs app's `ready`)."""
    pre_migrate.connect(_before_migrate, dispatch_uid="runs.health.lift_statement_timeout")
    post_migrate.connect(_after_migrate, dispatch_uid="runs.health.restore_statement_timeout")
