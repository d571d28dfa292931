"""What a Cedar set's decision depends on, read once per policy version, and the decisions kept by it.

A decision is a function of the request and the entities (the actor and its groups, the operation
and its effect, the target), of the parts of `context` the policies read, and of the run's
approvals (a hold is lifted by one). The set is read once when it is loaded: which `context`
attributes any of its conditions reads, and which fields of `context.input`. A call's key is made
of exactly those; two calls with the same key get the same decision, so the second is a look-up.

Reading is conservative: `context` used whole (`context == {...}`, `context` passed on) makes every
part of it count, and `context.input` used whole (or by a computed name) makes the whole input count.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from runs.policies.cedar.request import _ESCAPE_KEYS, to_cedar_value
from runs.policies.decisions import Decision, PolicyCall

# How many decisions one policy version keeps; past it the kept ones are dropped and kept afresh.
LIMIT = 4096

_ACCESS = (".", "has")
_CONTEXT = {"Var": "context"}
_INPUT = {".": {"left": _CONTEXT, "attr": "input"}}
_MISSING = ("missing",)


@dataclass(frozen=True)
class Reads:
    """What a set's conditions read of `context`: attribute names (None: all of it) and, of
    `context.input`, field names (None: all of it)."""

    context: frozenset[str] | None
    input: frozenset[str] | None


def _is(node: Any, shape: Mapping[str, Any]) -> bool:
    return isinstance(node, Mapping) and node == shape


def _walk(node: Any, context: set[str], inputs: set[str], whole: list[str]) -> None:
    """Collect what `node` reads into `context` and `inputs`; `whole` gets "context" or "input"
    when one is used other than through a named attribute."""
    if isinstance(node, list):
        for item in node:
            _walk(item, context, inputs, whole)
        return
    if not isinstance(node, Mapping):
        return
    if _is(node, _CONTEXT):
        whole.append("context")  # reached here only when not under a named access (see below)
        return
    if _is(node, _INPUT):  # `context.input` itself, not one of its fields
        context.add("input")
        whole.append("input")
        return
    for key in _ACCESS:
        access = node.get(key)
        if isinstance(access, Mapping) and set(access) == {"left", "attr"}:
            left, attr = access["left"], access["attr"]
            if _is(left, _CONTEXT) and isinstance(attr, str):
                context.add(attr)
                return
            if _is(left, _INPUT) and isinstance(attr, str):
                context.add("input")
                inputs.add(attr)
                return
    for value in node.values():
        _walk(value, context, inputs, whole)


def reads_of(ests: Iterable[Mapping[str, Any]]) -> Reads:
    """What the policies (their JSON forms) read of a call's context, all together."""
    context: set[str] = set()
    inputs: set[str] = set()
    whole: list[str] = []
    for est in ests:
        _walk(est.get("conditions") or [], context, inputs, whole)
    if "context" in whole:
        return Reads(context=None, input=None)
    return Reads(context=frozenset(context), input=None if "input" in whole else frozenset(inputs))


def _shown(value: Any) -> Any:
    """A Cedar value as a hashable key part (records and sets as canonical JSON)."""
    if value is None:
        return _MISSING
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return (type(value).__name__, value)  # 1 and True differ; both stay as Cedar has them


def key_of(call: PolicyCall, reads: Reads) -> tuple[Any, ...]:
    """Everything the decision on `call` depends on, as a hashable tuple."""
    given = call.input if isinstance(call.input, Mapping) else {}
    read = reads.context
    if read is None or (reads.input is None and "input" in read):
        input_part: Any = _shown(to_cedar_value(given) or {})
    elif "input" in read:
        assert reads.input is not None
        input_part = tuple(
            _shown(None if name in _ESCAPE_KEYS else to_cedar_value(given.get(name))) for name in sorted(reads.input)
        )
    else:
        input_part = None
    return (
        call.op_id,
        str(call.effect),
        str(call.actor),
        tuple(str(g) for g in call.groups),
        call.target,
        call.covered_by,
        call.run.approvals,
        str(call.run.workflow) if read is None or "workflow" in read else None,
        str(call.run.id) if read is None or "run_id" in read else None,
        input_part,
        _shown(to_cedar_value(call.money)) if read is None or {"amount", "currency"} & read else None,
        _shown(to_cedar_value(call.spent)) if read is None or "spent" in read else None,
    )


class Decisions:
    """The decisions one policy version gave, by key (a bounded dict, safe across threads)."""

    def __init__(self, reads: Reads, limit: int = LIMIT) -> None:
        self.reads = reads
        self.limit = limit
        self._kept: dict[tuple[Any, ...], Decision] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple[Any, ...]) -> Decision | None:
        found = self._kept.get(key)
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def keep(self, key: tuple[Any, ...], decision: Decision) -> None:
        with self._lock:
            if len(self._kept) >= self.limit:
                self._kept.clear()
            self._kept[key] = decision

    def __len__(self) -> int:
        return len(self._kept)
