"""The Cedar request for a call: principal, action, resource and context, the call's input as a
Cedar record."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runs.policies.decisions import (
    PolicyCall,
)

# Cedar's JSON value format reads these keys as escapes (an entity reference, an extension value),
# so a record key of the input spelt like this could forge an entity: such keys are left out.
_ESCAPE_KEYS = frozenset({"__entity", "__extn", "__expr"})

_I64 = (-(2**63), 2**63 - 1)

_DECIMAL_LIMIT = 922337203685477  # Cedar decimals: i64 with four fractional digits


# Turning a call into a Cedar request


def _decimal(value: float) -> dict[str, Any] | None:
    if value != value or value in (float("inf"), float("-inf")) or abs(value) >= _DECIMAL_LIMIT:
        return None
    text = f"{round(value, 4):.4f}".rstrip("0")
    if text.endswith("."):
        text += "0"
    if text == "-0.0":
        text = "0.0"
    return {"__extn": {"fn": "decimal", "arg": text}}


def to_cedar_value(value: Any) -> Any:
    """A JSON value as Cedar can take it, or None to leave it out.

    Records keep their keys (except Cedar's escape keys), lists become sets, integers stay Longs
    (out of range: left out), floats become Cedar decimals (compare with `.greaterThan(decimal(..))`),
    nulls are left out.
    """
    if value is None:
        return None
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value if _I64[0] <= value <= _I64[1] else None
    if isinstance(value, float):
        return _decimal(value)
    if isinstance(value, Mapping):
        record = {}
        for key, item in value.items():
            if not isinstance(key, str) or key in _ESCAPE_KEYS:
                continue
            converted = to_cedar_value(item)
            if converted is not None:
                record[key] = converted
        return record
    if isinstance(value, (list, tuple)):
        items = [to_cedar_value(item) for item in value]
        return [item for item in items if item is not None]
    return None


def _approval_id(approval: Any) -> str | None:
    if isinstance(approval, Mapping):
        return approval.get("id")
    return getattr(approval, "id", None)


def _uid(kind: str, ident: str) -> dict[str, str]:
    return {"type": kind, "id": ident}


def cedar_request(call: PolicyCall) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The Cedar request and entities for a call."""
    op_id = call.op_id
    principal = _uid("User", str(call.actor))
    action = _uid("Action", op_id)
    entities: list[dict[str, Any]] = [
        {"uid": principal, "attrs": {}, "parents": [_uid("Group", str(g)) for g in call.groups]},
        {"uid": action, "attrs": {}, "parents": [_uid("Action", str(call.effect))]},
    ]
    context: dict[str, Any] = {
        "effect": str(call.effect),
        "input": to_cedar_value(call.input if isinstance(call.input, Mapping) else {}) or {},
        "workflow": str(call.run.workflow),
        "run_id": str(call.run.id),
    }
    if call.money is not None:  # a money operation naming its amount (see `runs.spend`)
        context["amount"] = int(call.money["cents"])
        context["currency"] = str(call.money.get("currency") or "")
        if call.spent is not None:
            context["spent"] = to_cedar_value(call.spent) or {}
    if call.target is not None:
        resource = _uid("Target", str(call.target))
        entities.append({"uid": resource, "attrs": {}, "parents": [_uid("Operation", op_id)]})
        context["target"] = str(call.target)
    else:
        resource = _uid("Operation", op_id)
    request = {"principal": principal, "action": action, "resource": resource, "context": context}
    return request, entities
