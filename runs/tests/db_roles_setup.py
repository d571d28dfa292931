"""The test database under the roles production uses (the root conftest's `django_db_setup`).

PostgreSQL: pytest-django creates and migrates the test database as DATABASE_URL's user (the
owner); then `db_roles` grants the runtime role on it and every connection, in every thread and
in the worker processes the tests start (they are given the connection's settings), reconnects as
that role. The suite runs with the runtime's privileges: it may read and append the ledger, no
more. Between transactional tests Django flushes the tables with one TRUNCATE, which only the
owner may do and the ledger's trigger refuses: the flush runs on an owner connection with that
trigger disabled for its transaction.

SQLite: the flush's DELETE of ledger rows is refused by the ledger's triggers; it drops them
around the flush and creates them again.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from runs.retention import triggers as ledger_triggers  # the triggers as the latest migration left them

RUNTIME_ROLE = "sanoma_test_runtime"
RUNTIME_PASSWORD = "sanoma-test-runtime"  # a test database's role; for servers that ask for one

_owner: dict[str, Any] = {}


def owner_connect(**kwargs: Any) -> Any:
    """A psycopg connection to the test database as its owner (PostgreSQL)."""
    import psycopg

    s = _owner
    return psycopg.connect(dbname=s["NAME"], user=s["USER"] or None, password=s["PASSWORD"] or None,
                           host=s["HOST"] or None, port=s["PORT"] or None, **kwargs)


def runtime_role_active() -> bool:
    return bool(_owner)


def _pg_flush(self: Any, sql_list: Iterable[str]) -> None:
    with owner_connect() as conn, conn.transaction():
        conn.execute("ALTER TABLE runs_ledgerrecord DISABLE TRIGGER runs_ledgerrecord_no_truncate")
        for sql in sql_list:
            conn.execute(sql)
        conn.execute("ALTER TABLE runs_ledgerrecord ENABLE TRIGGER runs_ledgerrecord_no_truncate")


def _sqlite_flush(self: Any, sql_list: Iterable[str]) -> None:
    from django.db import transaction

    with transaction.atomic(using=self.connection.alias), self.connection.cursor() as cursor:
        for sql in ledger_triggers.SQLITE_DROP:
            cursor.execute(sql)
        for sql in sql_list:
            cursor.execute(sql)
        for sql in ledger_triggers.SQLITE_CREATE:
            cursor.execute(sql)


@contextmanager
def as_runtime_role(django_db_blocker: Any) -> Iterator[None]:
    from django.db import connections

    connection = connections["default"]
    ops_class = type(connection.ops)
    original_flush = ops_class.execute_sql_flush
    if connection.vendor == "sqlite":
        ops_class.execute_sql_flush = _sqlite_flush  # type: ignore[method-assign]
        try:
            yield
        finally:
            ops_class.execute_sql_flush = original_flush  # type: ignore[method-assign]
        return
    if connection.vendor != "postgresql":
        yield
        return
    from runs.management.commands.db_roles import apply

    settings_dict = connection.settings_dict
    _owner.update({k: settings_dict[k] for k in ("NAME", "USER", "PASSWORD", "HOST", "PORT")})
    with django_db_blocker.unblock():
        apply(connection, runtime=RUNTIME_ROLE, password=RUNTIME_PASSWORD)
        connection.close()
    # settings_dict is the dict every new connection (any thread) is made from.
    settings_dict["USER"], settings_dict["PASSWORD"] = RUNTIME_ROLE, RUNTIME_PASSWORD
    ops_class.execute_sql_flush = _pg_flush  # type: ignore[method-assign]
    try:
        yield
    finally:
        ops_class.execute_sql_flush = original_flush  # type: ignore[method-assign]
        with django_db_blocker.unblock():
            for conn in connections.all(initialized_only=True):
                conn.close()
        settings_dict["USER"], settings_dict["PASSWORD"] = _owner["USER"], _owner["PASSWORD"]
        _owner.clear()
