"""One statement of the engine's hot path, sent with its parameters bound by the server.

Django's PostgreSQL cursor binds parameters on the client (`server_side_binding` is off by
default, for connection poolers): each parameter is quoted into the statement's text in Python,
which for a step's checkpoint (27 parameters) was a good part of its CPU. Here the statement goes
to libpq as it is (`PQexecParams` on Django's own connection), its parameters as text beside it,
with no psycopg cursor around it (measured on this machine, the 27-parameter insert: 107 µs of
client CPU through Django's kind of cursor, 73 through a psycopg server-binding cursor, 39 here).
Nothing is prepared on the server, so a connection pooler still works.

Everything else is Django's: the connection is opened, health-checked and thread-checked as
`connection.cursor()` does, a broken transaction is refused, errors are Django's (an
`IntegrityError` is `django.db.IntegrityError`; a dropped connection is psycopg's
`OperationalError` with no SQLSTATE, as `runs.engine.reconnect` reads it), and
`connection.execute_wrapper`s see the statement. Where Django would log or trace the statement
(`DEBUG`, `assertNumQueries`, tracing on), where a parameter is of a type not handled here, or
where psycopg would first open the transaction itself, it goes through Django's cursor instead.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections

from runs.telemetry import tracing

# psycopg's errors and libpq's statuses, imported by the first statement sent here on PostgreSQL
# (a process on SQLite never imports psycopg): `_psycopg()`.
_pg: tuple[Any, Any] | None = None

# Parameter types, as PostgreSQL's oids: text goes as "unknown", typed by where it stands (as
# psycopg sends it), so `id = $1` compares with the column's own type and uses its index.
_UNKNOWN, _BOOL, _INT8, _FLOAT8, _TIMESTAMP, _TIMESTAMPTZ = 0, 16, 20, 701, 1114, 1184

_INT8_LIMIT = 2**63  # a larger integer goes through Django's cursor (psycopg sends it as numeric)

_converted: dict[str, bytes] = {}


def _numbered(sql: str) -> bytes:
    """Django's `%s` placeholders as PostgreSQL's `$1, $2, ...` (the hot path's statements have no
    `%%` and no other `%`)."""
    query = _converted.get(sql)
    if query is None:
        parts = sql.split("%s")
        query = _converted[sql] = (parts[0] + "".join(f"${n}{part}" for n, part in enumerate(parts[1:], 1))).encode()
    return query


class _Unhandled(Exception):
    """A parameter of a type sent here as nothing else: the statement goes through Django's cursor."""


def _dumped(params: Sequence[Any]) -> tuple[list[bytes | None], list[int]]:
    values: list[bytes | None] = []
    types: list[int] = []
    value, typed = values.append, types.append
    for param in params:
        kind = type(param)
        if kind is str:
            value(param.encode())
            typed(_UNKNOWN)
        elif kind is int and -_INT8_LIMIT <= param < _INT8_LIMIT:
            value(b"%d" % param)
            typed(_INT8)
        elif param is None:
            value(None)
            typed(_UNKNOWN)
        elif kind is datetime:
            value(param.isoformat().encode())
            typed(_TIMESTAMP if param.tzinfo is None else _TIMESTAMPTZ)
        elif kind is bool:
            value(b"t" if param else b"f")
            typed(_BOOL)
        elif kind is float:
            value(repr(param).encode())
            typed(_FLOAT8)
        elif isinstance(param, str):  # a StrEnum (a record's kind): its text
            value(str.encode(param))
            typed(_UNKNOWN)
        elif isinstance(param, int) and not isinstance(param, bool) and -_INT8_LIMIT <= param < _INT8_LIMIT:
            value(b"%d" % param)
            typed(_INT8)
        else:
            raise _Unhandled
    return values, types


def _psycopg() -> tuple[Any, Any]:
    global _pg
    if _pg is None:
        from psycopg import errors, pq

        _pg = (errors, pq)
    return _pg


def returns_row(sql: str, params: Sequence[Any]) -> bool:
    """Run one statement on the default connection; True when it returned a row."""
    db = connections[DEFAULT_DB_ALIAS]
    if db.vendor != "postgresql" or db.queries_logged or tracing.ON:
        return _through_django(db, sql, params)
    pg_errors, pq = _psycopg()
    try:
        values, types = _dumped(params)
    except _Unhandled:
        return _through_django(db, sql, params)
    # What `db.cursor()` checks before handing out a cursor.
    db.close_if_health_check_failed()
    db.ensure_connection()
    db.validate_thread_sharing()
    raw = db.connection
    if not raw.autocommit and raw.pgconn.transaction_status != pq.TransactionStatus.INTRANS:
        return _through_django(db, sql, params)  # psycopg opens the transaction (BEGIN) first
    returned: list[bool] = []

    def execute(sql: str, params: Any, many: bool, context: dict[str, Any]) -> None:
        db.validate_no_broken_transaction()
        with db.wrap_database_errors:
            result = raw.pgconn.exec_params(_numbered(sql), values, types)
            if result.status == pq.ExecStatus.FATAL_ERROR:
                if raw.pgconn.status != pq.ConnStatus.OK:  # the server is gone: as psycopg says it
                    message = result.error_message.decode("utf-8", "replace").strip()
                    raise pg_errors.OperationalError(message or "the connection to the server was lost")
                raise pg_errors.error_from_result(result, encoding="utf-8")
            returned.append(result.status == pq.ExecStatus.TUPLES_OK and result.ntuples > 0)

    executor = execute
    for wrapper in reversed(db.execute_wrappers):  # as Django's cursor calls them
        executor = functools.partial(wrapper, executor)
    executor(sql, params, False, {"connection": db, "cursor": None})
    return returned[0]


def _through_django(db: Any, sql: str, params: Sequence[Any]) -> bool:
    with db.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone() is not None
