"""Write-only values filled in as the driver is called, and never anywhere else.

`create` and `update` of a resource type are called with a write-only field holding its secret by
name, `{"secret": "SHOP_WEBHOOK_SECRET"}`: that is what the run's input, the policy, an approval,
the step and the ledger see. Every resource type's driver function is wrapped (`seal`) so that, as
the engine calls it, the names are replaced by the values, the vendor's reply is scrubbed of them
(a vendor echoing one back does not put it in the step), and so is the message of any error.

The value is the one the engine hands the driver in `CallContext.secrets`: the vendor's connector's
declared environment (`manage.py credentials`), the process environment first, then the stored
value, then the default. The engine computes it on the worker's own thread, so the wrapper, which
runs on a thread of the engine's call pool, never touches the database. A secret the vendor's
connector does not declare, or one without a value, is `secret_missing`, raised before the vendor
is called, so nothing is sent without it. The wrapper writes nothing anywhere: what an apply created
is recorded by the apply run itself (`sanoma.resources.record`, see `changes.resources.people`).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from connectors.drivers import CallContext, Driver
from connectors.errors import DriverError
from connectors.resources import ResourceType

SECRET_MISSING = "secret_missing"
REDACTED = "[secret]"

Resolver = Callable[[str, CallContext], str]


def resolve_secret(name: str, context: CallContext) -> str:
    """The value of `secret("NAME")` for this call: the vendor's declared variable `NAME`, as the
    engine gave it to the driver (environment, stored, default). Missing is `secret_missing`."""
    value = (context.secrets or {}).get(name, "")
    if isinstance(value, str) and value != "":
        return value
    vendor = context.op_id.split(".", 1)[0]
    raise DriverError(f"The secret {name} is missing: {vendor}'s driver gets no value for it; declare {name} in "
                      f"{vendor}'s environment and set it in the environment or with "
                      f"`manage.py credentials set {name}`", retryable=False, status=None,
                      vendor_code=SECRET_MISSING)


def scrub(value: Any, secrets: list[str]) -> Any:
    """`value` with every secret value replaced, wherever it appears in a string."""
    if not secrets:
        return value
    if isinstance(value, str):
        for s in secrets:
            value = value.replace(s, REDACTED)
        return value
    if isinstance(value, Mapping):
        return {k: scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(v, secrets) for v in value]
    return value


def _filled(values: Mapping[str, Any], names: Mapping[str, str], found: Mapping[str, str]) -> dict[str, Any]:
    return {k: (found[names[k]] if k in names else v) for k, v in values.items()}


def sealed(rt: ResourceType, verb: str, fn: Callable[[Any, CallContext], Any],
           resolver: Resolver = resolve_secret) -> Callable[[Any, CallContext], Any]:
    """`fn` (a type's driver function for `verb`) with secrets filled in, and its reply and errors
    scrubbed of them."""

    def call(payload: Any, context: CallContext) -> Any:
        values: list[str] = []
        names = rt.secret_fields(payload.desired)
        names.update(rt.secret_fields(getattr(payload, "changes", {}) or {}))
        found = {name: resolver(name, context) for name in dict.fromkeys(names.values())}
        values = sorted((v for v in found.values() if v), key=len, reverse=True)
        if names:
            update: dict[str, Any] = {"desired": _filled(payload.desired, names, found)}
            if verb == "update":
                update["changes"] = _filled(payload.changes, names, found)
            payload = payload.model_copy(update=update)  # never dumped: only the driver sees it
        try:
            reply = fn(payload, context)
        except Exception as err:
            text = str(err)
            if values and any(v in text for v in values):
                raise DriverError(scrub(text, values), retryable=getattr(err, "retryable", False) is True,
                                  status=getattr(err, "status", None)) from None
            raise
        return unread(rt, scrub(reply, values))

    return call


def unread(rt: ResourceType, reply: Any) -> Any:
    """A reply without the type's write-only fields: the vendor never shows them back, and what a vendor
    shows of one anyway is neither compared nor recorded."""
    hidden = {name for name, opts in rt.fields.items() if opts.write_only}
    held = reply.get("values") if isinstance(reply, Mapping) else None
    if not hidden or not isinstance(held, Mapping) or not hidden & set(held):
        return reply
    return {**reply, "values": {k: v for k, v in held.items() if k not in hidden}}


def _reading(rt: ResourceType, fn: Callable[[Any, CallContext], Any]) -> Callable[[Any, CallContext], Any]:
    def call(payload: Any, context: CallContext) -> Any:
        return unread(rt, fn(payload, context))

    return call


def seal(driver: Driver, types: Mapping[str, ResourceType], resolver: Resolver = resolve_secret) -> Driver:
    """`driver` with each resource type's `create` and `update` wrapped (see `sealed`), and its
    `import` and `read` answering no write-only field (see `unread`)."""
    functions = dict(driver.functions)
    touched = False
    for rt in types.values():
        if any(opts.write_only for opts in rt.fields.values()):
            for verb in ("import", "read"):
                op_id = rt.op_id(verb)
                if op_id in functions:
                    functions[op_id] = _reading(rt, functions[op_id])
                    touched = True
        for verb in ("create", "update"):
            op_id = rt.op_id(verb)
            if op_id in functions:
                functions[op_id] = sealed(rt, verb, functions[op_id], resolver)
                touched = True
    if not touched:
        return driver
    return dataclasses.replace(driver, functions=functions)


__all__ = ["REDACTED", "SECRET_MISSING", "resolve_secret", "scrub", "seal", "sealed"]
