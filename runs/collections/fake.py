"""The in-memory stand-in for the `data` vendor that scenarios run on: the same four operations,
the same answers (versions, `conflict`, `not_found`, key order, cursors) as the database driver,
built with the fakes' machinery, so a scenario seeds it (`Given data.notes.put was called with`),
faults it, and reads its state (`Then the data's state at "notes.1001.record.text" is ...`).

Its state holds each collection under its name's parts, each record under its key:
`{"notes": {"1001": {"record": {...}, "version": 1}}, "support": {"tickets": {...}}}`.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from connectors.drivers import CallContext
from connectors.fakes import Fake, define_fake
from connectors.operations import Connector
from runs.collections.definition import (
    Collection,
    conflict,
    decode_cursor,
    encode_cursor,
    key_of,
    not_found,
)


def records_of(state: dict[str, Any], name: str) -> dict[str, Any]:
    """The records of collection `name` in a fake's state (made when missing)."""
    place = state
    for part in name.split("."):
        place = place.setdefault(part, {})
    return place


def _entry(key: str, stored: dict[str, Any]) -> dict[str, Any]:
    return {"key": key, "record": stored["record"], "version": stored["version"]}


def _functions(collection: Collection) -> dict[str, Callable[[dict[str, Any], Any, CallContext], Any]]:
    name = collection.name

    def get(state: dict[str, Any], parsed: Any, context: CallContext) -> dict[str, Any]:
        stored = records_of(state, name).get(parsed.key)
        if stored is None:
            raise not_found(name, parsed.key)
        return _entry(parsed.key, stored)

    def list_(state: dict[str, Any], parsed: Any, context: CallContext) -> dict[str, Any]:
        records = records_of(state, name)
        after = decode_cursor(parsed.cursor) if parsed.cursor is not None else None
        keys = sorted(k for k in records if k.startswith(parsed.prefix) and (after is None or k > after))
        page = keys[: parsed.limit]
        cursor = encode_cursor(page[-1]) if len(keys) > parsed.limit else None
        return {"records": [_entry(k, records[k]) for k in page], "cursor": cursor}

    def put(state: dict[str, Any], parsed: Any, context: CallContext) -> dict[str, Any]:
        record: BaseModel = parsed.record
        key = key_of(record, collection.key)
        records = records_of(state, name)
        found = records.get(key, {}).get("version", 0)
        if parsed.if_version is not None and parsed.if_version != found:
            raise conflict(name, key, expected=parsed.if_version, found=found)
        records[key] = {"record": record.model_dump(mode="json"), "version": found + 1}
        return _entry(key, records[key])

    def delete(state: dict[str, Any], parsed: Any, context: CallContext) -> dict[str, Any]:
        records = records_of(state, name)
        found = records.get(parsed.key, {}).get("version", 0)
        if parsed.if_version is not None and parsed.if_version != found:
            raise conflict(name, parsed.key, expected=parsed.if_version, found=found)
        return {"key": parsed.key, "deleted": records.pop(parsed.key, None) is not None}

    return {"get": get, "list": list_, "put": put, "delete": delete}


def data_fake(connector: Connector, collections: list[Collection], file: Path | None = None) -> Fake:
    """The `data` vendor's fake over these collections (empty at first)."""
    ops: dict[str, dict[str, Any]] = {c.name: _functions(c) for c in collections}
    return define_fake(connector, initial={}, ops=ops, file=file)
