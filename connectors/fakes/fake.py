"""`Fake`: a connector's stand-in that honours idempotency keys, with faults injected per operation,
and `define_fake`, which makes one."""
from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeAlias, TypeVar

from pydantic import BaseModel

from connectors.drivers import CallContext, Driver, check_complete, flatten_impl
from connectors.errors import DriverError
from connectors.fakes.books import (
    CallLog,
    _Answer,
    _Book,
    _copy,
    _error_from_record,
    _error_record,
    _FileStore,
    _json_copy,
    _MemoryStore,
    _now,
)
from connectors.operations import Connector, Operation
from connectors.resource_fake import fill_resource_functions

InputT = TypeVar("InputT", bound=BaseModel)

# A fake's operation: `fn(state, parsed_input, call_context) -> reply`, editing `state` in place.
# Generic in the input like `DriverFn`, so each function may name its own operation's model.
OpFn: TypeAlias = Callable[[dict[str, Any], InputT, CallContext], Any]

Initial = dict | Callable[[], dict]


class Fake:
    """A stand-in for one vendor. Build it with `define_fake`."""

    def __init__(
        self,
        connector: Connector,
        initial: Initial,
        functions: Mapping[str, OpFn[Any]],
        *,
        file: Path | None = None,
        calls: CallLog | None = None,
    ) -> None:
        self.vendor = connector.vendor
        self.connector = connector
        self.file = file
        self._initial = initial
        self._functions = dict(functions)
        self._owner = object()
        self._holds: dict[str, deque[threading.Event]] = {}
        self._holds_lock = threading.Lock()
        if file is None:
            self._log: CallLog | None = calls if calls is not None else CallLog()
            self._store: _MemoryStore | _FileStore = _MemoryStore(self._fresh_book)
        else:
            self._log = calls
            self._store = _FileStore(file, self.vendor, self._fresh_book)
        self.driver = Driver(vendor=self.vendor, functions={op_id: self._driver_fn(op_id) for op_id in self._functions},
                             inline=self._answers_inline)

    def __repr__(self) -> str:
        where = f" file={str(self.file)!r}" if self.file else ""
        return f"<Fake {self.vendor}{where}>"

    # reading

    @property
    def state(self) -> dict[str, Any]:
        return self._store.read(lambda book: book.state)

    @property
    def calls(self) -> list[dict[str, Any]]:
        if self.file is not None:
            return self._store.read(lambda book: book.calls)
        assert self._log is not None
        return self._log._of(self._owner)

    # calling

    def call(self, op_id: str, payload: BaseModel | Mapping[str, Any], context: CallContext) -> dict[str, Any]:
        operation = self._operation(op_id)
        parsed = self._parse(operation, payload)
        entry = {
            "op": op_id,
            "input": parsed.model_dump(mode="json"),
            "at": "",
            "idempotency_key": context.idempotency_key,
            "attempt": context.attempt,
        }
        gate = self._take_hold(op_id)
        if gate is not None:
            gate.wait()
        answer = self._store.transact(lambda book: self._answer(book, op_id, parsed, context, entry))
        if answer.error is not None:
            raise answer.error
        assert answer.reply is not None
        return answer.reply

    def _driver_fn(self, op_id: str) -> Callable[[BaseModel, CallContext], dict[str, Any]]:
        def call(payload: BaseModel, context: CallContext) -> dict[str, Any]:
            return self.call(op_id, payload, context)

        call.__name__ = f"fake_{op_id.replace('.', '_').replace('-', '_')}"
        return call

    def _operation(self, op_id: str) -> Operation:
        operation = self.connector.operations.get(op_id)
        if operation is None:
            raise ValueError(f"fake {self.vendor}: no operation {op_id}")
        return operation

    @staticmethod
    def _parse(operation: Operation, payload: BaseModel | Mapping[str, Any]) -> BaseModel:
        if isinstance(payload, operation.input):
            return payload
        if isinstance(payload, BaseModel):
            payload = payload.model_dump()
        return operation.input.model_validate(payload)

    def _answer(
        self, book: _Book, op_id: str, parsed: BaseModel, context: CallContext, entry: dict[str, Any]
    ) -> _Answer:
        """One call against the book, under the store's lock. Errors are returned, not raised,
        so the store commits the call log (and a lost reply's effect) either way."""
        entry["at"] = _now()
        fault = self._pop_fault(book, op_id)
        if fault is not None and fault["kind"] in ("fail", "rate_limit"):
            return self._failed(book, entry, self._fault_error(op_id, fault))
        # A vendor that ignores idempotency keys (as the operation declares) takes every call anew.
        ignored = self._operation(op_id).idempotency_key == "ignored"
        key = None if ignored else context.idempotency_key
        remembered = book.replies.get(op_id, {}).get(key) if key else None
        if remembered is not None:
            reply, outcome = remembered, "repeat"
        else:
            try:
                reply, state = self._run(book.state, op_id, parsed, context)
            except Exception as err:
                return self._failed(book, entry, err)
            book.state = state
            if key:
                book.replies.setdefault(op_id, {})[key] = reply
            outcome = "ok"
        if fault is not None:  # lose: the effect stands, the caller never sees the reply
            return self._failed(book, entry, self._fault_error(op_id, fault))
        self._record(book, {**entry, "outcome": outcome})
        return _Answer(reply=_copy(reply))

    def _run(
        self, state: dict[str, Any], op_id: str, parsed: BaseModel, context: CallContext
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The op function against a copy of the state: nothing is kept unless it succeeds."""
        working = _copy(state)
        result = self._functions[op_id](working, parsed, context)
        if isinstance(result, BaseModel):
            reply = result.model_dump(mode="json")
        elif isinstance(result, dict):
            reply = _json_copy(result, f"fake {self.vendor}: the reply of {op_id}")
        else:
            raise TypeError(
                f"fake {self.vendor}: {op_id} must return a dict or a pydantic model; got {type(result).__name__}"
            )
        _json_copy(working, f"fake {self.vendor}: state after {op_id}: state")
        return reply, working

    def _failed(self, book: _Book, entry: dict[str, Any], err: BaseException) -> _Answer:
        self._record(book, {**entry, "outcome": "error", "error": str(err) or type(err).__name__})
        return _Answer(error=err)

    def _record(self, book: _Book, entry: dict[str, Any]) -> None:
        if self.file is not None:
            book.calls.append(entry)
        if self._log is not None:
            self._log._append(self._owner, entry)

    # faults

    def fail_next(self, op_id: str, err: BaseException | None = None) -> None:
        if err is not None and not isinstance(err, BaseException):
            raise TypeError(f"fake {self.vendor}: fail_next takes an exception; got {type(err).__name__}")
        fault: dict[str, Any] = {"kind": "fail"}
        if err is not None:
            fault["error"] = err if self.file is None else _json_copy(_error_record(err), "the error")
        self._queue_fault(op_id, fault)

    def lose_reply(self, op_id: str) -> None:
        self._queue_fault(op_id, {"kind": "lose"})

    def rate_limit(self, op_id: str, *, retry_after: float | None = None) -> None:
        """The next call of `op_id` is refused as a vendor refuses too many requests: a retryable
        429, with `retry_after` seconds (its `Retry-After`) when given."""
        fault: dict[str, Any] = {"kind": "rate_limit"}
        if retry_after is not None:
            fault["retry_after"] = float(retry_after)
        self._queue_fault(op_id, fault)

    def hold(self, op_id: str) -> Callable[[], None]:
        """The next call of `op_id` (in this process) waits before taking effect until the
        returned function is called. Holds queue on their own, apart from the other faults: a
        held call then meets the next queued fault, if any."""
        self._operation(op_id)
        gate = threading.Event()
        with self._holds_lock:
            self._holds.setdefault(op_id, deque()).append(gate)
        return gate.set

    def _queue_fault(self, op_id: str, fault: dict[str, Any]) -> None:
        self._operation(op_id)

        def add(book: _Book) -> None:
            book.faults.setdefault(op_id, []).append(fault)

        self._store.transact(add)

    @staticmethod
    def _pop_fault(book: _Book, op_id: str) -> dict[str, Any] | None:
        queue = book.faults.get(op_id)
        if not queue:
            return None
        fault = queue.pop(0)
        if not queue:
            del book.faults[op_id]
        return fault

    def _answers_inline(self, op_id: str) -> bool:
        """In memory with no hold queued for `op_id`: a call answers at once (the engine calls it
        on its own thread); a held one, or one on a shared file, gets a thread and a deadline."""
        return self.file is None and not self._holds.get(op_id)

    def _take_hold(self, op_id: str) -> threading.Event | None:
        with self._holds_lock:
            queue = self._holds.get(op_id)
            if not queue:
                return None
            gate = queue.popleft()
            if not queue:
                del self._holds[op_id]
            return gate

    def _fault_error(self, op_id: str, fault: dict[str, Any]) -> BaseException:
        kind = fault["kind"]
        if kind == "rate_limit":
            return DriverError(
                f"fake {self.vendor}: {op_id} is rate limited",
                retryable=True,
                status=429,
                vendor_code="rate_limited",
                retry_after=fault.get("retry_after"),
            )
        if kind == "lose":
            return DriverError(f"fake {self.vendor}: the reply to {op_id} was lost", retryable=True)
        error = fault.get("error")
        if error is None:
            return DriverError(f"fake {self.vendor}: {op_id} failed (injected fault)", retryable=True)
        if isinstance(error, BaseException):
            return error
        return _error_from_record(error)

    # editing

    def reset(self) -> None:
        """State back to initial; remembered replies, pending faults and this fake's calls gone."""

        def clear(book: _Book) -> None:
            fresh = self._fresh_book()
            book.state, book.replies, book.faults, book.calls = fresh.state, {}, {}, []

        self._store.transact(clear)
        with self._holds_lock:
            self._holds.clear()
        if self._log is not None:
            self._log._drop(self._owner)

    def update(self, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> None:
        """Edit the state as someone at the vendor would: `change` edits the state it is given in
        place or returns the new state. Nothing changes if it raises."""

        def apply(book: _Book) -> None:
            working = _copy(book.state)
            result = change(working)
            new = working if result is None else result
            if not isinstance(new, dict):
                raise TypeError(f"fake {self.vendor}: update must leave a dict as the state; got {type(new).__name__}")
            book.state = _json_copy(new, f"fake {self.vendor}: state after update: state")

        self._store.transact(apply)

    def fresh(self) -> Fake:
        """A new in-memory fake with the initial state, sharing nothing with this one."""
        return Fake(self.connector, self._initial, self._functions)

    def _fresh_book(self) -> _Book:
        initial = self._initial() if callable(self._initial) else self._initial
        if not isinstance(initial, dict):
            raise TypeError(f"fake {self.vendor}: initial must give a dict; got {type(initial).__name__}")
        return _Book(state=_json_copy(initial, f"fake {self.vendor}: initial state: state"))


def define_fake(
    connector: Connector,
    *,
    initial: Initial | None = None,
    ops: Mapping[str, Mapping[str, OpFn[Any]]] | None = None,
    file: str | os.PathLike[str] | None = None,
    calls: CallLog | None = None,
) -> Fake:
    """A fake vendor: `ops` maps each resource to its operations' functions, each called as
    `fn(state, parsed_input, call_context)`; it edits `state` (a JSON dict, `initial` at first) in
    place and returns the reply (a dict or a model). An error it raises is the vendor's answer
    (`DriverError(message, status=...)`), and the state is then left as it was.

    A resource type's five operations may be left out: each is then its in-memory fake, made from
    the type's schema (see `connectors.resource_fake`: the instances are kept at `state["<type>"]`).

    With `file`, the state, remembered replies, pending faults (except holds) and the call log live
    in that JSON file, shared by every process using it. With `calls`, the fake also appends its
    calls to that shared log.
    """
    initial = {} if initial is None else initial
    if not isinstance(connector, Connector):
        raise TypeError("define_fake needs a Connector")
    if not (isinstance(initial, dict) or callable(initial)):
        raise TypeError(f"fake {connector.vendor}: initial must be a dict or a function returning one")
    if calls is not None and not isinstance(calls, CallLog):
        raise TypeError(f"fake {connector.vendor}: calls must be a CallLog")
    functions = flatten_impl(connector.vendor, ops or {})
    fill_resource_functions(connector.vendor, connector.types, functions)
    check_complete("A fake", connector, set(functions))
    if isinstance(initial, dict):
        initial = _json_copy(initial, f"fake {connector.vendor}: initial state: state")
    path = Path(os.fspath(file)) if file is not None else None
    return Fake(connector, initial, functions, file=path, calls=calls)
