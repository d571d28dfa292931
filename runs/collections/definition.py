"""`define_collection`: a company's own records, kept on the database and called through `ctx`.

Plain Python (pydantic and the connector types): a company's files import this without Django.

A collection is a set of records of one pydantic model, each stored under a key taken from one of
its fields. Its four operations belong to the built-in vendor `data`, so every call goes through
`ctx`, the policy and the ledger like any vendor's:

    data.<name>.get     read   {key}                          -> {key, record, version}  (no record: not_found)
    data.<name>.list    read   {prefix?, limit?, cursor?}     -> {records: [{key, record, version}], cursor}
    data.<name>.put     write  {record, if_version?}          -> {key, record, version}  (stale version: conflict)
    data.<name>.delete  write  {key, if_version?}             -> {key, deleted}

An app's collection (declared in `apps/<app>/collections.py`, or in a file under
`apps/<app>/workflows/`) is named `<app>.<name>` and its operations are `data.<app>.<name>.<op>`.
"""
from __future__ import annotations

import base64
import binascii
import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from connectors.errors import ConfigError, ErrorCode, Problem, ProblemKind, SanomaError
from connectors.operations import Connector, Operation, VendorInfo
from runs.validation import json_issues

DATA_VENDOR = "data"
OPERATION_NAMES = ("get", "list", "put", "delete")
KEY_MAX_LENGTH = 200
NAME_MAX_LENGTH = 100
LIST_LIMIT = 50
LIST_LIMIT_MAX = 500
NAME_RULE = "lowercase letters, digits and underscores, starting with a letter (ctx.data.<name> must be Python)"
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_KEY_TYPES = (str, int)


# ---- names and where a collection is declared ---------------------------------------------------


def check_collection_name(name: Any) -> str | None:
    """What is wrong with a collection's (or an app's) name, or None."""
    if not isinstance(name, str) or not _NAME.match(name):
        return f"{name!r} is not a collection name: use {NAME_RULE}"
    if len(name) > NAME_MAX_LENGTH:
        return f"{name!r} is longer than {NAME_MAX_LENGTH} characters"
    return None


def collection_app_of(file: str | None) -> str | None:
    """The app a collection belongs to, by the file that declares it: `apps/<app>/collections.py`,
    `apps/<app>/collections/*.py` or `apps/<app>/workflows/*.py`; anything else belongs to none."""
    if not file:
        return None
    parts = Path(file).resolve().parts
    last = len(parts) - 1
    for i in range(len(parts) - 3, -1, -1):
        if parts[i] != "apps":
            continue
        if i + 2 == last and parts[i + 2] == "collections.py":
            return parts[i + 1]
        if i + 3 == last and parts[i + 2] in ("collections", "workflows"):
            return parts[i + 1]
    return None


# ---- cursors ------------------------------------------------------------------------------------


def encode_cursor(after: str) -> str:
    """An opaque cursor: the page goes on after this key."""
    return base64.urlsafe_b64encode(json.dumps({"after": after}).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    """The key a cursor goes on after; ValueError for anything a list did not return."""
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode())
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raw = None
    if not isinstance(raw, dict) or not isinstance(raw.get("after"), str) or set(raw) != {"after"}:
        raise ValueError("not a cursor a list of this collection returned: pass the `cursor` of the last page as is")
    after: str = raw["after"]
    return after


def key_of(record: BaseModel, field: str) -> str:
    """The key a record is stored under: its key field as text. ValueError when it cannot be one."""
    value = getattr(record, field)
    if isinstance(value, bool) or not isinstance(value, _KEY_TYPES):
        raise ValueError(f"the key field {field} must be text or a whole number; it is {type(value).__name__}")
    key = str(value)
    problem = key_problem(key)
    if problem:
        raise ValueError(f"the key field {field} {problem}")
    return key


def key_problem(key: str) -> str | None:
    if not key:
        return "is empty: a key is 1-200 characters"
    if len(key) > KEY_MAX_LENGTH:
        return f"is {len(key)} characters long: a key is at most {KEY_MAX_LENGTH}"
    issues = json_issues(key)
    if issues:
        return str(issues[0]["message"])
    return None


# ---- the operations' shapes ---------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _checked_key(value: str) -> str:
    problem = key_problem(value)
    if problem:
        raise ValueError(f"the key {problem}")
    return value


class KeyInput(_Strict):
    """`data.<name>.get`: the key of the record to read."""

    key: str = Field(min_length=1, max_length=KEY_MAX_LENGTH)

    _key = field_validator("key")(_checked_key)


class ListInput(_Strict):
    """`data.<name>.list`: records in key order, `limit` at a time, after the page `cursor` ended."""

    prefix: str = Field(default="", max_length=KEY_MAX_LENGTH, description="only keys starting with this")
    limit: int = Field(default=LIST_LIMIT, ge=1, le=LIST_LIMIT_MAX)
    cursor: str | None = Field(default=None, description="the `cursor` of the previous page, as it came")

    @field_validator("cursor")
    @classmethod
    def _cursor(cls, value: str | None) -> str | None:
        if value is not None:
            decode_cursor(value)
        return value


class DeleteInput(_Strict):
    """`data.<name>.delete`: the key; with `if_version`, only while the record is that version
    (0: only while there is none)."""

    key: str = Field(min_length=1, max_length=KEY_MAX_LENGTH)
    if_version: int | None = Field(default=None, ge=0)

    _key = field_validator("key")(_checked_key)


class DeleteOutput(BaseModel):
    key: str
    deleted: bool


def _class_name(name: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[._]", name) if part)


def _shapes(name: str, record: type[BaseModel], key: str) -> dict[str, tuple[type[BaseModel], type[BaseModel]]]:
    base = _class_name(name)
    entry = create_model(f"{base}Entry", key=(str, ...), record=(record, ...), version=(int, ...))

    def record_ok(cls: Any, value: BaseModel) -> BaseModel:
        key_of(value, key)
        issues = json_issues(value.model_dump(mode="json"))
        if issues:
            where = ".".join(str(p) for p in issues[0]["path"]) or "(record)"
            raise ValueError(f"{where}: {issues[0]['message']}")
        return value

    put_input = create_model(
        f"{base}Put", __base__=_Strict,
        __validators__={"record_ok": field_validator("record")(classmethod(record_ok))},  # type: ignore[dict-item]
        record=(record, Field(description=f"the record; its key is its {key} field")),
        if_version=(int | None, Field(default=None, ge=0, description="only while the record is this version "
                                                                      "(0: only while there is none)")),
    )
    list_output = create_model(f"{base}Page", records=(list[entry], ...),  # type: ignore[valid-type]
                               cursor=(str | None, None))
    return {"get": (KeyInput, entry), "list": (ListInput, list_output), "put": (put_input, entry),
            "delete": (DeleteInput, DeleteOutput)}


def _target(name: str, record_key: str | None) -> Any:
    """The instance a call acts on, as the policy sees it: `<collection>/<key>` (a put's key is
    its record's key field)."""
    def target(parsed: Any) -> str:
        if record_key is not None:
            return f"{name}/{key_of(parsed.record, record_key)}"
        return f"{name}/{parsed.key}"

    return target


EFFECTS = {"get": "read", "list": "read", "put": "write", "delete": "write"}
DESCRIPTIONS = {
    "get": "Read the record with this key (not_found when there is none).",
    "list": "Records in key order, with an optional key prefix, a limit (50, at most 500) and a cursor.",
    "put": "Insert or replace the record at its key; with if_version, only while it is that version (conflict).",
    "delete": "Delete the record with this key; with if_version, only while it is that version (conflict).",
}


@dataclass(frozen=True, eq=False)
class Collection:
    """A collection: its name (`notes`, `support.tickets`), its record model and key field, and
    its four operations (`notes.get`, `notes.list`, `notes.put`, `notes.delete`, for `uses`)."""

    name: str
    local_name: str
    app: str | None
    record: type[BaseModel]
    key: str
    operations: Mapping[str, Operation]
    file: str | None = None
    line: int | None = None
    title: str = ""

    def __repr__(self) -> str:
        return f"<collection {self.name}>"

    def op(self, name: str) -> Operation:
        return self.operations[name]

    @property
    def get(self) -> Operation:
        return self.operations["get"]

    @property
    def list(self) -> Operation:
        return self.operations["list"]

    @property
    def put(self) -> Operation:
        return self.operations["put"]

    @property
    def delete(self) -> Operation:
        return self.operations["delete"]

    @property
    def op_ids(self) -> tuple[str, ...]:
        return tuple(op.id for op in self.operations.values())


def _problem(text: str, file: str | None, line: int | None) -> ConfigError:
    return ConfigError([Problem(text, kind=ProblemKind.CONFIG_FILE, file=file, line=line)])


def define_collection(name: str, *, record: type[BaseModel], key: str, title: str = "") -> Collection:
    """A collection of `record`s (a pydantic model), each stored at the value of its `key` field
    (text or a whole number). Declared in a file under `apps/<app>/`, it is named `<app>.<name>`.

    A bad declaration raises ConfigError naming the file and line of the call and what is wrong."""
    frame = sys._getframe(1)
    file, line = frame.f_code.co_filename, frame.f_lineno
    problem = check_collection_name(name)
    if problem:
        raise _problem(f"define_collection: {problem}", file, line)
    if not (isinstance(record, type) and issubclass(record, BaseModel)):
        raise _problem(f"define_collection({name!r}): record must be a pydantic model class; got {record!r}",
                       file, line)
    fields = record.model_fields
    if not isinstance(key, str) or key not in fields:
        raise _problem(f"define_collection({name!r}): key {key!r} is not a field of {record.__name__}; "
                       f"its fields are {', '.join(fields) or 'none'}", file, line)
    annotation = fields[key].annotation
    if annotation not in _KEY_TYPES:
        shown = annotation.__name__ if isinstance(annotation, type) else repr(annotation)
        raise _problem(f"define_collection({name!r}): the key field {record.__name__}.{key} is {shown}; "
                       "a key field is str or int", file, line)
    app = collection_app_of(file)
    if app is not None and check_collection_name(app):
        raise _problem(f"define_collection({name!r}) is in app {app!r}, whose name cannot name a collection: "
                       f"an app with collections is named with {NAME_RULE}", file, line)
    full = f"{app}.{name}" if app else name
    operations: dict[str, Operation] = {}
    for op_name, (input_model, output_model) in _shapes(full, record, key).items():
        operations[op_name] = Operation(
            id=f"{DATA_VENDOR}.{full}.{op_name}", vendor=DATA_VENDOR, resource=full, name=op_name,
            effect=EFFECTS[op_name], input=input_model, output=output_model, idempotent=EFFECTS[op_name] == "read",
            description=DESCRIPTIONS[op_name],
            target=None if op_name == "list" else _target(full, key if op_name == "put" else None),
        )
    return Collection(name=full, local_name=name, app=app, record=record, key=key, operations=operations,
                      file=file, line=line, title=title)


DATA_INFO = VendorInfo(title="Collections: the company's own records, on the database")


def data_connector(collections: list[Collection]) -> Connector:
    """The built-in vendor `data` with every collection's operations (its halves attached by
    resolution: the database driver, and the in-memory fake scenarios use)."""
    operations: dict[str, Operation] = {}
    for collection in collections:
        for operation in collection.operations.values():
            operations[operation.id] = operation
    return Connector(vendor=DATA_VENDOR, operations=operations, info=DATA_INFO)


# ---- what a collection answers when it says no --------------------------------------------------


def not_found(collection: str, key: str) -> SanomaError:
    return SanomaError(f"Collection {collection} has no record {key!r}", code=ErrorCode.NOT_FOUND,
                       data={"collection": collection, "key": key}, name="NotFoundError")


def conflict(collection: str, key: str, *, expected: int, found: int) -> SanomaError:
    now = f"version {found}" if found else "no record"
    wanted = f"version {expected}" if expected else "no record"
    return SanomaError(f"{collection}/{key} has {now}, not {wanted} (if_version={expected}): nothing was changed",
                       code=ErrorCode.CONFLICT,
                       data={"collection": collection, "key": key, "if_version": expected, "version": found},
                       name="ConflictError")


def prefix_end(prefix: str) -> str | None:
    """The least text greater than every text starting with `prefix` (None: no bound), so a prefix
    is a range of keys in code-point order: `prefix <= key < prefix_end(prefix)`."""
    chars = list(prefix)
    while chars:
        point = ord(chars[-1]) + 1
        if 0xD800 <= point <= 0xDFFF:
            point = 0xE000
        if point <= 0x10FFFF:
            chars[-1] = chr(point)
            return "".join(chars)
        chars.pop()
    return None
