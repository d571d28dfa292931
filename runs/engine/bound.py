"""The engine's hot statements (a step's checkpoint, a run's claim and the read of its steps),
sent with their parameters bound by the server and prepared once per connection.

Django's PostgreSQL cursor binds parameters on the client (`server_side_binding` is off by
default, for connection poolers): each parameter is quoted into the statement's text in Python,
which for a step's checkpoint (27 parameters) was a good part of its CPU. Here the statement goes
to libpq as it is (`PQexecParams` on Django's own connection), its parameters as text beside it,
with no psycopg cursor around it (measured on this machine, the 27-parameter insert: 107 µs of
client CPU through Django's kind of cursor, 73 through a psycopg server-binding cursor, 39 here).

Each statement is prepared on the server once per connection (`PQprepare`, named `sanoma_<n>`) and
then only executed (`PQexecPrepared`): PostgreSQL plans it a few times, then keeps one generic plan.
Planning was half the server's work for a step: the checkpoint's statement took 0.67 ms of the
server's time sent as text each time and 0.34 ms prepared (pgbench, one client, this machine),
and the step in-process went from 0.98 to 0.73 ms. `SANOMA_PREPARED_STATEMENTS=false` sends each
statement unprepared, for a connection pooler that does not keep prepared statements (PgBouncer in
transaction mode before 1.21, or without `max_prepared_statements`).

Everything else is Django's: the connection is opened, health-checked and thread-checked as
`connection.cursor()` does, a broken transaction is refused, errors are Django's (an
`IntegrityError` is `django.db.IntegrityError`; a dropped connection is psycopg's
`OperationalError` with no SQLSTATE, as `runs.engine.reconnect` reads it), and
`connection.execute_wrapper`s see the statement. Where Django would log or trace the statement
(`DEBUG`, `assertNumQueries`, tracing on), where a parameter is of a type not handled here, or
where psycopg would open the transaction some other way than a plain `BEGIN` (an isolation level
set on the connection), it goes through Django's cursor instead. Rows come back read by the
connection's own loaders, as Django's cursor reads them (`rows`), or as text (`first_row`).
"""
from __future__ import annotations

import functools
import itertools
import json
import logging
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

from runs.telemetry import tracing

# psycopg's errors, loaders and libpq's statuses, imported with the first statement sent here on
# PostgreSQL (`_load_psycopg`): a process on SQLite never imports psycopg.
_pg_errors: Any = None
Transformer: Any = None
ConnStatus: Any = None
ExecStatus: Any = None
TransactionStatus: Any = None
_Jsonb: Any = None


def _load_psycopg() -> None:
    global _pg_errors, Transformer, ConnStatus, ExecStatus, TransactionStatus, _Jsonb
    from psycopg import adapt, errors, pq
    from psycopg.types import json as pg_json

    _pg_errors, Transformer, _Jsonb = errors, adapt.Transformer, pg_json.Jsonb
    ConnStatus, TransactionStatus, ExecStatus = pq.ConnStatus, pq.TransactionStatus, pq.ExecStatus

# Parameter types, as PostgreSQL's oids: text goes as "unknown", typed by where it stands (as
# psycopg sends it), so `id = $1` compares with the column's own type and uses its index.
_UNKNOWN, _BOOL, _INT8, _FLOAT8, _TIMESTAMP, _TIMESTAMPTZ, _TEXT_ARRAY = 0, 16, 20, 701, 1114, 1184, 1009

_INT8_LIMIT = 2**63  # a larger integer goes through Django's cursor (psycopg sends it as numeric)

_converted: dict[str, bytes] = {}

logger = logging.getLogger("sanoma.engine")


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
        elif param is None:
            value(None)
            typed(_UNKNOWN)
        elif kind is bool:
            value(b"t" if param else b"f")
            typed(_BOOL)
        elif isinstance(param, int):  # an int, or an IntEnum: its number
            if not -_INT8_LIMIT <= param < _INT8_LIMIT:
                raise _Unhandled
            value(b"%d" % param)
            typed(_INT8)
        elif kind is datetime:
            value(param.isoformat().encode())
            typed(_TIMESTAMP if param.tzinfo is None else _TIMESTAMPTZ)
        elif kind is float:
            value(repr(param).encode())
            typed(_FLOAT8)
        elif kind is list and all(type(item) is str for item in param):  # text[]: `= ANY(%s)`
            value(("{" + ",".join('"' + item.replace("\\", "\\\\").replace('"', '\\"') + '"'
                                  for item in param) + "}").encode())
            typed(_TEXT_ARRAY)
        elif isinstance(param, str):  # a StrEnum (a record's kind): its text
            value(str.encode(param))
            typed(_UNKNOWN)
        elif kind is _Jsonb:  # a JSON field as Django adapts it (a run's start): its text, cast by the statement
            value((param.dumps or json.dumps)(param.obj).encode())
            typed(_UNKNOWN)
        else:
            raise _Unhandled
    return values, types


_NAMED = re.compile(r"%\((\w+)\)s")
_positional: dict[str, tuple[str, tuple[str, ...]]] = {}


def positional(sql: str, params: Mapping[str, Any]) -> tuple[str, list[Any]]:
    """A statement with named placeholders (`%(name)s`, as Django's cursor takes them) as one with
    `%s` ones, and its parameters in their order (a name used twice is sent twice)."""
    found = _positional.get(sql)
    if found is None:
        found = _positional[sql] = (_NAMED.sub("%s", sql), tuple(_NAMED.findall(sql)))
    text, names = found
    return text, [params[name] for name in names]


def first_row(sql: str, params: Sequence[Any]) -> tuple[str | None, ...] | None:
    """Run one statement on the default connection; the first row it returned, each value as its
    text (None for NULL), or None when it returned none."""
    executed = _executed(sql, params)
    if executed is None:  # through Django's cursor
        found = _through_django(sql, params, all_rows=False)
        return None if not found else tuple(None if value is None else str(value) for value in found[0])
    result = executed[0]
    if result.status == ExecStatus.TUPLES_OK and result.ntuples > 0:
        return tuple(None if (value := result.get_value(0, column)) is None else value.decode()
                     for column in range(result.nfields))
    return None


def rows(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Run one statement on the default connection; the rows it returned, their values read as
    Django's cursor reads them (the connection's own loaders: JSON as text, aware datetimes)."""
    executed = _executed(sql, params)
    if executed is None:
        return _through_django(sql, params, all_rows=True)
    result, raw = executed
    if result.status != ExecStatus.TUPLES_OK or not result.ntuples:
        return []
    loader = Transformer(raw)
    loader.set_pgresult(result)
    return loader.load_rows(0, result.ntuples, tuple)


def _executed(sql: str, params: Sequence[Any]) -> tuple[Any, Any] | None:
    """The statement's result from libpq and the psycopg connection it went on, or None when it is
    to go through Django's cursor."""
    db = connections[DEFAULT_DB_ALIAS]
    if db.vendor != "postgresql" or db.queries_logged or tracing.ON:
        return None
    if ExecStatus is None:
        _load_psycopg()
    try:
        values, types = _dumped(params)
    except _Unhandled:
        return None
    # What `db.cursor()` checks before handing out a cursor.
    db.close_if_health_check_failed()
    db.ensure_connection()
    db.validate_thread_sharing()
    raw = db.connection
    if not raw.autocommit and raw.pgconn.transaction_status != TransactionStatus.INTRANS:
        if (raw.pgconn.transaction_status != TransactionStatus.IDLE or raw.isolation_level is not None
                or raw.read_only is not None or raw.deferrable is not None):
            return None  # psycopg opens this transaction its own way
        # The transaction's first statement: opened as psycopg opens it (a plain BEGIN).
        db.validate_no_broken_transaction()
        with db.wrap_database_errors:
            begun = raw.pgconn.exec_(b"BEGIN")
            if begun.status != ExecStatus.COMMAND_OK:
                _raise(raw, begun)
    returned: list[Any] = []

    def execute(sql: str, params: Any, many: bool, context: dict[str, Any]) -> None:
        db.validate_no_broken_transaction()
        with db.wrap_database_errors:
            result = _run(db, raw.pgconn, sql, values, types)
            if result.status == ExecStatus.FATAL_ERROR:
                _raise(raw, result)
            returned.append(result)

    executor = execute
    for wrapper in reversed(db.execute_wrappers):  # as Django's cursor calls them
        executor = functools.partial(wrapper, executor)
    executor(sql, params, False, {"connection": db, "cursor": None})
    return returned[0], raw


def _raise(raw: Any, result: Any) -> None:
    if raw.pgconn.status != ConnStatus.OK:  # the server is gone: as psycopg says it
        message = result.error_message.decode("utf-8", "replace").strip()
        raise _pg_errors.OperationalError(message or "the connection to the server was lost")
    raise _pg_errors.error_from_result(result, encoding="utf-8")


def _run(db: Any, pgconn: Any, sql: str, values: list[bytes | None], types: list[int]) -> Any:
    """The statement's result: executed as prepared on this connection (prepared first when it is
    not yet), or sent whole when prepared statements are off."""
    if not settings.SANOMA_PREPARED_STATEMENTS:
        return pgconn.exec_params(_numbered(sql), values, types)
    names = prepared_here(db, pgconn)
    # The parameters' types are the statement's: a NULL where a number stood before is another one.
    key = (sql, tuple(types))
    name = names.get(key)
    if name is None:
        name = b"sanoma_%d" % next(_numbers)
        made = pgconn.prepare(name, _numbered(sql), types)
        if made.status == ExecStatus.FATAL_ERROR:
            return made
        names[key] = name
    result = pgconn.exec_prepared(name, values)
    if result.status == ExecStatus.FATAL_ERROR and result.error_field(_SQLSTATE) == _NO_SUCH_STATEMENT:
        # The server no longer has it (a pooler handed this connection another server session):
        # forget every statement of this connection, so the next call prepares them again.
        names.clear()
        logger.error("the database no longer holds the engine's prepared statements; behind a connection "
                     "pooler that does not keep them, set SANOMA_PREPARED_STATEMENTS=false")
    return result


_numbers = itertools.count(1)  # names never repeat in a process, so none is taken on a server session
_SQLSTATE = 67  # PG_DIAG_SQLSTATE
_NO_SUCH_STATEMENT = b"26000"  # invalid_sql_statement_name


def prepared_here(db: Any, pgconn: Any) -> dict[tuple[str, tuple[int, ...]], bytes]:
    """The statements prepared on this server connection, by (statement, parameter types); a new
    connection (after a reconnect) starts with none."""
    held = getattr(db, "_sanoma_prepared", None)
    if held is None or held[0] is not pgconn:
        held = db._sanoma_prepared = (pgconn, {})
    return held[1]


def _through_django(sql: str, params: Sequence[Any], *, all_rows: bool) -> list[tuple[Any, ...]]:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute(sql, params)
        if cursor.description is None:
            return []
        if all_rows:
            return list(cursor.fetchall())
        row = cursor.fetchone()
        return [] if row is None else [row]
