"""The `data` vendor's driver: collections on the database (`runs.CollectionRecord`).

A write (put, delete) changes the record and keeps its reply in `runs.CollectionWrite` under the
call's idempotency key in ONE transaction. A write retried with the same key returns the first
reply and changes nothing. Keys are ordered by code point on every database (collation C on
PostgreSQL, BINARY on SQLite), the order the fake uses too.

Two forms, like the engine's checkpoint (`runs.engine.fastpath`):
- the general path (the ORM; SQLite, and every delete): the idempotency key is looked up, the
  record's row is locked with `select_for_update` while a compare-and-set (`if_version`) compares,
  the record and the reply are written, in `transaction.atomic()`;
- a put on PostgreSQL is one statement (a data-modifying CTE, one round trip): the record's upsert,
  or with `if_version` an insert that does nothing on a taken key (0) or an update whose WHERE
  names the version (N) - PostgreSQL locks the row it changes and reads its newest version, so a
  stale version changes nothing - and the reply's insert under the idempotency key; a key already
  used fails the whole statement (nothing changed), and the first reply is read and returned.

The models are looked up through Django's app registry when a call runs, not imported, and the
page query is SQL over the model's table (`QuerySet.raw`, so its fields are read as the ORM reads
them): this module is reached from `runs.authoring`, which a company's files import without Django
set up, so it imports nothing of `django.db.models`.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.db import IntegrityError, connection, transaction

from connectors.drivers import CallContext, Driver
from runs.collections.definition import (
    DATA_VENDOR,
    Collection,
    conflict,
    decode_cursor,
    encode_cursor,
    key_of,
    not_found,
    prefix_end,
)
from runs.engine import bound, clock

if TYPE_CHECKING:  # the models' types only: see the module's docstring
    from runs.models import CollectionRecord, CollectionWrite

# A write racing another write that inserts the same new key (or the same idempotency key) loses
# with an IntegrityError, its transaction rolled back: it is tried again and then sees the winner.
WRITE_TRIES = 3


def record_model() -> type[CollectionRecord]:
    return apps.get_model("runs", "CollectionRecord")


def write_model() -> type[CollectionWrite]:
    return apps.get_model("runs", "CollectionWrite")


def code_point_order() -> str:
    """The collation that orders text by code point on this database."""
    return "C" if connection.vendor == "postgresql" else "BINARY"


def records(collection: str, *, prefix: str = "", after: str | None = None, limit: int) -> list[CollectionRecord]:
    """Up to `limit` of the collection's records in key order (code points), keys starting with
    `prefix` (a range of keys in that order), after the key `after`."""
    Record = record_model()
    q = connection.ops.quote_name
    key = f"{q('key')} COLLATE {q(code_point_order())}"
    where, params = [f"{q('collection')} = %s"], [collection]
    if prefix:
        where.append(f"{key} >= %s")
        params.append(prefix)
        end = prefix_end(prefix)
        if end is not None:
            where.append(f"{key} < %s")
            params.append(end)
    if after is not None:
        where.append(f"{key} > %s")
        params.append(after)
    sql = (f"SELECT * FROM {q(Record._meta.db_table)} WHERE {' AND '.join(where)} "
           f"ORDER BY {key} LIMIT %s")
    return list(Record.objects.raw(sql, [*params, limit]))


def page(collection: str, *, prefix: str = "", limit: int, cursor: str | None = None) -> dict[str, Any]:
    """One page: `{records: [{key, record, version, updated_at, updated_by_run}], cursor}`; `cursor`
    is None on the last page."""
    after = decode_cursor(cursor) if cursor is not None else None
    rows = records(collection, prefix=prefix, after=after, limit=limit + 1)
    more = len(rows) > limit
    found = [{"key": r.key, "record": r.record, "version": r.version, "updated_at": r.updated_at,
              "updated_by_run": r.updated_by_run} for r in rows[:limit]]
    return {"records": found, "cursor": encode_cursor(found[-1]["key"]) if more else None}


def _written(context: CallContext) -> dict[str, Any] | None:
    if not context.idempotency_key:
        return None
    reply: dict[str, Any] | None = (write_model().objects.filter(idempotency_key=context.idempotency_key)
                                    .values_list("reply", flat=True).first())
    return reply


def _write(collection: str, key: str, context: CallContext, change: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    """`change(locked row or None)` -> reply, with the reply kept under the idempotency key, in one
    transaction; a repeated key returns the first reply without calling `change`."""
    Record, Write = record_model(), write_model()
    for attempt in range(1, WRITE_TRIES + 1):
        try:
            with transaction.atomic():
                done = _written(context)
                if done is not None:
                    return done
                row = Record.objects.select_for_update().filter(collection=collection, key=key).first()
                reply = change(row)
                if context.idempotency_key:
                    Write.objects.create(idempotency_key=context.idempotency_key, collection=collection, key=key,
                                         reply=reply, written_at=clock.now())
                return reply
        except IntegrityError:
            if attempt == WRITE_TRIES:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


_PUT_CHANGES = {
    # no if_version: insert or replace
    "any": """INSERT INTO runs_collectionrecord (collection, "key", record, version, updated_at, updated_by_run)
        VALUES (%(collection)s, %(key)s, %(record)s::jsonb, 1, %(at)s, %(run)s)
        ON CONFLICT (collection, "key") DO UPDATE SET record = EXCLUDED.record,
            version = runs_collectionrecord.version + 1, updated_at = EXCLUDED.updated_at,
            updated_by_run = EXCLUDED.updated_by_run
        RETURNING version""",
    # if_version 0: only while there is none
    "new": """INSERT INTO runs_collectionrecord (collection, "key", record, version, updated_at, updated_by_run)
        VALUES (%(collection)s, %(key)s, %(record)s::jsonb, 1, %(at)s, %(run)s)
        ON CONFLICT (collection, "key") DO NOTHING
        RETURNING version""",
    # if_version N: only while it is that version
    "version": """UPDATE runs_collectionrecord SET record = %(record)s::jsonb, version = version + 1,
            updated_at = %(at)s, updated_by_run = %(run)s
        WHERE collection = %(collection)s AND "key" = %(key)s AND version = %(if_version)s
        RETURNING version""",
}
_PUT_SQL = """WITH put AS ({change}), written AS (
    INSERT INTO runs_collectionwrite (idempotency_key, collection, "key", reply, written_at)
    SELECT %(idempotency_key)s, %(collection)s, %(key)s,
        jsonb_build_object('key', %(key)s::text, 'record', %(record)s::jsonb, 'version', version), %(at)s
    FROM put WHERE %(idempotency_key)s <> ''
)
SELECT version FROM put"""
PUT_SQL = {kind: _PUT_SQL.format(change=change) for kind, change in _PUT_CHANGES.items()}


def _one_row(sql: str, params: dict[str, Any]) -> Any:
    """Run one statement; its first row's first value (as text), or None. Atomic on its own (one
    round trip in autocommit); inside a caller's transaction a savepoint keeps a refused insert
    from aborting it. Prepared once per connection, as the engine's own statements are."""
    text, values = bound.positional(sql, params)
    if connection.in_atomic_block:
        with transaction.atomic():
            row = bound.first_row(text, values)
    else:
        row = bound.first_row(text, values)
    return None if row is None else row[0]


def put_one_statement(collection: str, key: str, record: dict[str, Any], if_version: int | None,
                      context: CallContext) -> dict[str, Any]:
    """A put on PostgreSQL, in one statement (see the module's docstring)."""
    kind = "any" if if_version is None else ("new" if if_version == 0 else "version")
    params = {"collection": collection, "key": key, "record": json.dumps(record), "at": clock.now(),
              "run": context.run_id or "", "if_version": if_version, "idempotency_key": context.idempotency_key or ""}
    try:
        version = _one_row(PUT_SQL[kind], params)
    except IntegrityError:
        done = _written(context)  # this key wrote before: its reply, and nothing changed now
        if done is None:
            raise
        return done
    if version is not None:
        version = int(version)
    if version is None:  # the stored version differs, unless this very write already happened
        done = _written(context)
        if done is not None:
            return done
        found = record_model().objects.filter(collection=collection, key=key).values_list("version", flat=True).first()
        raise conflict(collection, key, expected=if_version or 0, found=found or 0)
    return {"key": key, "record": record, "version": version}


def _operations(collection: Collection) -> dict[str, Callable[[Any, CallContext], Any]]:
    name = collection.name

    def get(parsed: Any, context: CallContext) -> dict[str, Any]:
        row = record_model().objects.filter(collection=name, key=parsed.key).values("record", "version").first()
        if row is None:
            raise not_found(name, parsed.key)
        return {"key": parsed.key, "record": row["record"], "version": row["version"]}

    def list_(parsed: Any, context: CallContext) -> dict[str, Any]:
        found = page(name, prefix=parsed.prefix, limit=parsed.limit, cursor=parsed.cursor)
        return {"records": [{"key": r["key"], "record": r["record"], "version": r["version"]}
                            for r in found["records"]], "cursor": found["cursor"]}

    def put(parsed: Any, context: CallContext) -> dict[str, Any]:
        key = key_of(parsed.record, collection.key)
        record = parsed.record.model_dump(mode="json")
        if connection.vendor == "postgresql":
            return put_one_statement(name, key, record, parsed.if_version, context)

        def change(row: Any) -> dict[str, Any]:
            found = row.version if row is not None else 0
            if parsed.if_version is not None and parsed.if_version != found:
                raise conflict(name, key, expected=parsed.if_version, found=found)
            values = {"record": record, "version": found + 1, "updated_at": clock.now(),
                      "updated_by_run": context.run_id or ""}
            if row is None:
                record_model().objects.create(collection=name, key=key, **values)
            else:
                record_model().objects.filter(pk=row.pk).update(**values)
            return {"key": key, "record": record, "version": found + 1}

        return _write(name, key, context, change)

    def delete(parsed: Any, context: CallContext) -> dict[str, Any]:
        def change(row: Any) -> dict[str, Any]:
            found = row.version if row is not None else 0
            if parsed.if_version is not None and parsed.if_version != found:
                raise conflict(name, parsed.key, expected=parsed.if_version, found=found)
            if row is not None:
                record_model().objects.filter(pk=row.pk).delete()
            return {"key": parsed.key, "deleted": row is not None}

        return _write(name, parsed.key, context, change)

    return {"get": get, "list": list_, "put": put, "delete": delete}


def database_driver(collections: list[Collection]) -> Driver:
    """The `data` vendor's driver over these collections."""
    functions: dict[str, Any] = {}
    for collection in collections:
        for op_name, fn in _operations(collection).items():
            functions[collection.op(op_name).id] = fn
    return Driver(vendor=DATA_VENDOR, functions=functions)
