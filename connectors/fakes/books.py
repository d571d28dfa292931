"""Where a fake keeps what it knows: its state and the replies it gave (a book), in memory or in a
file shared between processes, the calls it was made (`CallLog`), and JSON-safe copies of both."""
from __future__ import annotations

import builtins
import contextlib
import fcntl
import json
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from connectors.errors import DriverError, error_from_dict, error_to_dict

T = TypeVar("T")
_FILE_FORMAT = 1


class _NotJson(Exception):
    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value
        self.path: list[str] = []


_LEAVES = (str, bool, int, float)


def _copy(value: Any) -> Any:
    """A deep copy made of dicts with string keys, lists, strings, numbers, booleans and None."""
    kind = type(value)
    if value is None or kind is str or kind is int or kind is bool or kind is float or isinstance(value, _LEAVES):
        return value
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if type(key) is not str and not isinstance(key, str):
                err = _NotJson(key)
                err.path.append(f"[{key!r}] (a key)")
                raise err
            kind = type(item)
            if item is None or kind is str or kind is int or kind is bool or kind is float:
                out[key] = item  # a leaf, as `_copy` gives it back: no call for it
                continue
            try:
                out[key] = _copy(item)
            except _NotJson as err:
                err.path.insert(0, f".{key}")
                raise
        return out
    if isinstance(value, list):
        items = []
        for index, item in enumerate(value):
            try:
                items.append(_copy(item))
            except _NotJson as err:
                err.path.insert(0, f"[{index}]")
                raise
        return items
    raise _NotJson(value)


def _json_copy(value: Any, what: str) -> Any:
    try:
        return _copy(value)
    except _NotJson as err:
        where = what + "".join(err.path)
        raise TypeError(
            f"{where} is a {type(err.value).__name__}, which is not JSON-safe "
            "(use dicts with string keys, lists, strings, numbers, booleans and None)"
        ) from None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _error_record(err: BaseException) -> dict[str, Any]:
    record = error_to_dict(err)
    if type(err).__module__ == "builtins":
        record["builtin"] = True
    return record


def _error_from_record(record: dict[str, Any]) -> BaseException:
    """The error a file-stored fault throws: a DriverError stays one, a builtin error keeps its
    class, anything else comes back as a SanomaError with the same name, code and message."""
    message = record.get("message", "")
    if record.get("code") == "driver_failed":
        return DriverError(
            message,
            retryable=bool(record.get("retryable", False)),
            status=record.get("status"),
            vendor_code=record.get("vendor_code"),
        )
    cls = getattr(builtins, record.get("name", ""), None)
    if record.get("builtin") and isinstance(cls, type) and issubclass(cls, BaseException):
        return cls(message)
    return error_from_dict(record)


class CallLog:
    """One ordered log of calls that several fakes append to (the `calls=` option)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: list[tuple[object, dict[str, Any]]] = []

    @property
    def entries(self) -> list[dict[str, Any]]:
        with self._lock:
            return [_copy(entry) for _, entry in self._rows]

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()

    def _append(self, owner: object, entry: dict[str, Any]) -> None:
        with self._lock:
            self._rows.append((owner, entry))

    def _of(self, owner: object) -> list[dict[str, Any]]:
        with self._lock:
            return [_copy(entry) for who, entry in self._rows if who is owner]

    def _drop(self, owner: object) -> None:
        with self._lock:
            self._rows = [row for row in self._rows if row[0] is not owner]


@dataclass
class _Book:
    """Everything a fake remembers except its holds: what a file-backed fake stores."""

    state: dict[str, Any]
    replies: dict[str, dict[str, Any]] = field(default_factory=dict)  # op id -> key -> reply
    faults: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # op id -> queue
    calls: list[dict[str, Any]] = field(default_factory=list)  # file mode only


class _MemoryStore:
    def __init__(self, fresh_book: Callable[[], _Book]) -> None:
        self._lock = threading.Lock()
        self._book = fresh_book()

    def read(self, pick: Callable[[_Book], Any]) -> Any:
        with self._lock:
            return _copy(pick(self._book))

    def transact(self, apply: Callable[[_Book], T]) -> T:
        with self._lock:
            return apply(self._book)


class _FileStore:
    """A book in a JSON file: each change locks `<file>.lock`, reads, applies, replaces the file."""

    def __init__(self, path: Path, vendor: str, fresh_book: Callable[[], _Book]) -> None:
        self.path = path
        self._lock_path = path.with_name(path.name + ".lock")
        self._vendor = vendor
        self._fresh_book = fresh_book

    def read(self, pick: Callable[[_Book], Any]) -> Any:
        # Writers replace the file atomically, so a reader needs no lock.
        return pick(self._load())

    def transact(self, apply: Callable[[_Book], T]) -> T:
        with self._locked():
            book = self._load()
            result = apply(book)
            self._save(book)
            return result

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        # The folder is made by the first change, not when the fake is made: a process that only
        # reads (`manage.py health`, a check) makes no folder.
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    def _load(self) -> _Book:
        try:
            with open(self.path, encoding="utf-8") as fh:
                raw = json.load(fh)
        except FileNotFoundError:
            return self._fresh_book()
        except json.JSONDecodeError as err:
            raise ValueError(f"fake {self._vendor}: {self.path} is not a fake's JSON file ({err})") from None
        if not isinstance(raw, dict) or raw.get("format") != _FILE_FORMAT or raw.get("vendor") != self._vendor:
            raise ValueError(f"fake {self._vendor}: {self.path} is not this fake's file")
        return _Book(state=raw["state"], replies=raw["replies"], faults=raw["faults"], calls=raw["calls"])

    def _save(self, book: _Book) -> None:
        text = json.dumps(
            {
                "format": _FILE_FORMAT,
                "vendor": self._vendor,
                "state": book.state,
                "replies": book.replies,
                "faults": book.faults,
                "calls": book.calls,
            },
            separators=(",", ":"),
        )
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        try:
            os.fchmod(fd, 0o644)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise


@dataclass
class _Answer:
    reply: dict[str, Any] | None = None
    error: BaseException | None = None
