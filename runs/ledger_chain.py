"""The ledger's hash chain: the canonical form of a record's content, its digest and its link.

The rules, without the model, so that `LedgerRecord.save` can link a record before inserting it;
`runs.ledger` explains the chain and verifies it.
"""
from __future__ import annotations

import hashlib
import json
from decimal import Decimal
from typing import Any

from django.db import connections

CONTENT_FIELDS = ("record_id", "run_id", "seq", "v", "app", "at", "actor", "workflow", "kind", "body", "group")


class _NotPlain(Exception):
    """A value JSON would change on its way in (a key that is not text): take the slow path."""


def _normal(value: Any) -> Any:
    """A JSON value as any database gives it back: an integral float is its integer (PostgreSQL's
    jsonb prints 1e16 as 10000000000000000, read back as an int); tuples are lists."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None or isinstance(value, str | int):
        return value  # a str or int subclass (a LedgerKind) is written as its plain value
    if kind is float:
        if not value.is_integer():
            return value
        # The integer its shortest decimal form names (1e300 is 10**300, as jsonb stores it).
        return int(value) if abs(value) < 2**53 else int(Decimal(repr(value)))
    if kind is dict:
        if not all(type(k) is str for k in value):
            raise _NotPlain
        return {k: _normal(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [_normal(v) for v in value]
    raise _NotPlain


def _as_is(value: Any) -> bool:
    """Whether `_normal` would give `value` back unchanged for JSON's purposes, so that JSON of
    `value` itself is already its canonical form: text keys only, and no integral float (nor any
    value JSON does not take). A look through the containers, building nothing: most records'
    content is this, and `_normal`'s copy is the costlier part of a digest."""
    kind = type(value)
    if kind is dict:
        values: Any = value.values()
        if not all(type(k) is str for k in value):
            return False
    elif kind is list or kind is tuple:
        values = value
    else:
        values = (value,)
    for item in values:
        kind = type(item)
        if kind is str or kind is int or kind is bool or item is None:
            continue
        if kind is dict or kind is list or kind is tuple:
            if not _as_is(item):
                return False
        elif kind is float:
            if item.is_integer():
                return False
        elif not isinstance(item, str | int):
            return False
    return True


# The canonical form's encoder, made once (json.dumps with these options makes one per call).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def _plain(value: Any) -> Any:
    """`value` as the canonical form encodes it: itself when JSON of it is already canonical."""
    if _as_is(value):  # JSON of it as it is: the same text as of its normal form
        return value
    try:
        return _normal(value)
    except _NotPlain:
        return _normal(json.loads(json.dumps(value)))


def canonical(content: dict[str, Any]) -> str:
    """The canonical JSON of a record's content, as stored and read back: sorted keys, no spaces,
    ASCII only. Values JSON would change (keys that are not text, subclasses) go through JSON first."""
    return _CANONICAL.encode(_plain(content))


def content_of(record: Any) -> dict[str, Any]:
    if isinstance(record, dict):
        return {name: record[name] for name in CONTENT_FIELDS}
    return {name: getattr(record, name) for name in CONTENT_FIELDS}


def content_digest(record: Any) -> str:
    return hashlib.sha256(canonical(content_of(record)).encode("ascii")).hexdigest()


_BESIDE_BODY = tuple(name for name in CONTENT_FIELDS if name != "body")


def digest_and_body(record: Any) -> tuple[str, str | None]:
    """The record's content digest (as `content_digest`), and the JSON text of its body when that
    text is its body as it is (sorted keys, ASCII escapes): one encoding of the body serves the
    digest and the insert. None when the canonical form rewrites something in the body (an integral
    float, a key that is not text): the insert then sends JSON of the body as it is."""
    body = record.body
    if type(body) is not dict or not _as_is(body):
        return content_digest(record), None
    body_text = _CANONICAL.encode(body)
    beside = _CANONICAL.encode(_plain({name: getattr(record, name) for name in _BESIDE_BODY}))
    # The content's keys sorted: "body" comes between "at" and "group", whose text starts the first
    # `,"group":` (a quote inside an encoded string is always escaped).
    cut = beside.index(',"group":')
    text = f'{beside[:cut]},"body":{body_text}{beside[cut:]}'
    return hashlib.sha256(text.encode("ascii")).hexdigest(), body_text


def link(prev_hash: str, digest: str) -> str:
    """A record's hash: SHA-256 of the previous record's hash then its content digest (hex text).
    The PostgreSQL trigger computes the same: encode(sha256(convert_to(prev || digest, 'UTF8')), 'hex')."""
    return hashlib.sha256((prev_hash + digest).encode("ascii")).hexdigest()


def chain_in_python(record: Any, using: str) -> None:
    """Link `record` after its run's last record (SQLite; PostgreSQL's trigger does it there).
    Called inside the writer's transaction, which on SQLite holds the one write lock."""
    last = (type(record)._default_manager.using(using).filter(run_id=record.run_id).order_by("-chain_index")
            .values_list("chain_index", "hash").first())
    record.chain_index = 0 if last is None else last[0] + 1
    record.prev_hash = "" if last is None else last[1]
    record.hash = link(record.prev_hash, content_digest(record))


# On PostgreSQL a record inserted with this chain_index asks the link trigger to link it; a record
# inserted with its link already made (chain_index >= 0) is left as it is (`link_after`).
ASK_TRIGGER = -1

# How many records this process has had linked by anything but `link_after` (the trigger or
# `chain_in_python`): a writer that keeps its run's last link in memory (the engine's checkpoint)
# knows it may be stale once this has moved.
linked_elsewhere = 0


def prepare(record: Any, using: str) -> None:
    """Before inserting: the content digest goes in `hash` for PostgreSQL's trigger to chain, or the
    whole link is made here (any other database)."""
    if connections[using].vendor == "postgresql":
        for_trigger(record)
    else:
        global linked_elsewhere
        linked_elsewhere += 1
        chain_in_python(record, using)


def for_trigger(record: Any) -> None:
    """Ready `record` for PostgreSQL's link trigger: it asks to be linked (`ASK_TRIGGER`) and
    carries its content digest in `hash`; the body's JSON text, when the digest's serves the
    insert too, is left in `record.body_text` (`digest_and_body`)."""
    global linked_elsewhere
    linked_elsewhere += 1
    digest, record.body_text = digest_and_body(record)
    record.chain_index, record.prev_hash, record.hash = ASK_TRIGGER, "", digest


def link_after(record: Any, last: tuple[int, str]) -> tuple[int, str]:
    """Link `record` right after its run's record `last` = (chain_index, hash), as the trigger
    would; the new last. Only for a writer that knows `last` is its run's last record: an insert
    linked after any other is refused by the unique (run_id, chain_index) index when that index is
    taken, and named by `ledger verify` otherwise. The body's JSON text, when the digest's serves
    the insert too, is left in `record.body_text` (`digest_and_body`)."""
    index, prev_hash = last
    digest, record.body_text = digest_and_body(record)
    record.chain_index, record.prev_hash = index + 1, prev_hash
    record.hash = link(prev_hash, digest)
    return record.chain_index, record.hash
