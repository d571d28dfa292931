"""The shop's real driver: its HTTP API, with the environment `ShopEnvironment` names."""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

from company.vendors.shop.connector import shop
from company.vendors.shop.models import ShipmentRequest
from company.vendors.shop.resources import product, staff_role, webhook
from runs.authoring import (
    CallContext,
    DriverError,
    define_driver,
)


def _http(method: str, path: str, payload: dict[str, Any], context: CallContext) -> dict[str, Any]:
    """The shop's HTTP API; its URL and key come from the credentials store with each call
    (`CallContext.secrets`: the environment, else the stored value), never from the config."""
    base = context.secrets.get("SHOP_API_URL")
    key = context.secrets.get("SHOP_API_KEY")
    if not base or not key:
        raise DriverError("SHOP_API_URL and SHOP_API_KEY must be set to call the shop", retryable=False)
    request = urllib.request.Request(
        base.rstrip("/") + path,
        data=json.dumps(payload).encode(),
        method=method,
        headers={"Authorization": f"Bearer {key}", "Idempotency-Key": context.idempotency_key,
                 "Content-Type": "application/json"},
    )
    try:
        # The call's own deadline bounds the HTTP request, so a hung shop fails this attempt.
        with urllib.request.urlopen(request, timeout=context.time_left() or 30) as reply:
            return json.loads(reply.read() or b"{}")
    except urllib.error.HTTPError as err:
        # Retryable as the status says (408, 429, 5xx), the vendor's Retry-After honoured.
        raise DriverError(f"shop answered {err.code} to {method} {path}", status=err.code,
                          retry_after=_retry_after(err.headers.get("Retry-After"))) from None
    except (urllib.error.URLError, TimeoutError) as err:
        raise DriverError(f"shop could not be reached: {err}", retryable=True) from None


def _find_shipment_at_the_shop(i: ShipmentRequest, c: CallContext) -> dict[str, Any]:
    """The shop's bookings of the order with this carrier: the latest one, or that there is none."""
    try:
        found = _http("GET", f"/orders/{i.order_id}/shipments?carrier={urllib.parse.quote(i.carrier)}", {}, c)
    except DriverError as err:
        if err.status == 404:
            return {"happened": False}
        raise
    bookings = found.get("shipments") or []
    return {"happened": True, "output": bookings[-1]} if bookings else {"happened": False}


def _retry_after(header: str | None) -> float | None:
    """The seconds of a `Retry-After: <seconds>` header; None when absent or a date."""
    try:
        return max(0.0, float(header)) if header else None
    except ValueError:
        return None


def _gone(id: str) -> dict[str, Any]:
    return {"id": id, "gone": True}


def _found(method: str, path: str, id: str, context: CallContext, *, handle_key: str = "id") -> dict[str, Any]:
    """A lookup: the instance, or `gone` when the shop answers 404."""
    try:
        vendor = _http(method, path, {}, context)
    except DriverError as err:
        if err.status == 404:
            return _gone(id)
        raise
    return {"id": id, "handle": str(vendor[handle_key]), "values": vendor}


def _deleted(path: str, id: str, context: CallContext) -> dict[str, Any]:
    try:
        _http("DELETE", path, {}, context)
    except DriverError as err:
        if err.status != 404:
            raise
    return _gone(id)


def _vendor_product(values: Mapping[str, Any]) -> dict[str, Any]:
    """Declared product fields in the shop's shape (the reverse of `_product_values`)."""
    out: dict[str, Any] = {}
    if "sku" in values:
        out["sku"] = values["sku"]
    if "title" in values:
        out["name"] = values["title"]
    if "price_cents" in values or "currency" in values:
        out["price"] = {k: v for k, v in (("amount", values.get("price_cents")), ("currency", values.get("currency")))
                        if v is not None}
    if "tags" in values:
        out["tags"] = list(values["tags"])
    return out


def _role_path(id: str) -> str:
    user, _, role = id.rpartition(":")
    return f"/staff/roles/{user}/{role}"


def _webhook_handle(i: Any, c: CallContext) -> str | None:
    if i.handle:
        return str(i.handle)
    found = _found("GET", f"/webhooks/by-url?url={urllib.parse.quote(i.id, safe='')}", i.id, c)
    return None if found.get("gone") else str(found["handle"])


def _webhook_update(i: Any, c: CallContext) -> dict[str, Any]:
    handle = _webhook_handle(i, c)
    if handle is None:
        raise DriverError(f"no webhook {i.id}", retryable=False, status=404, vendor_code="not_found")
    vendor = _http("PATCH", f"/webhooks/{handle}", {"events": i.desired["events"],
                                                   "secret": i.desired.get("signing_secret")}, c)
    return {"id": i.id, "handle": handle, "values": vendor}


def _webhook_delete(i: Any, c: CallContext) -> dict[str, Any]:
    handle = _webhook_handle(i, c)
    return _gone(i.id) if handle is None else _deleted(f"/webhooks/{handle}", i.id, c)


def _created(vendor: dict[str, Any], id: str, handle_key: str = "id") -> dict[str, Any]:
    return {"id": id, "handle": str(vendor[handle_key]), "values": vendor}


def make_driver():
    return define_driver(
        shop,
        {
            "order": {
                "get": lambda i, c: _http("GET", f"/orders/{i.order_id}", {}, c),
                "refund": lambda i, c: _http("POST", f"/orders/{i.order_id}/refunds", i.model_dump(), c),
            },
            "refund": {"list": lambda i, c: _http("GET", f"/refunds?limit={i.limit}", {}, c)},
            "shipment": {
                "book": lambda i, c: _http("POST", f"/orders/{i.order_id}/shipments", i.model_dump(), c),
                "find": _find_shipment_at_the_shop,
            },
            "customer": {
                "notify": lambda i, c: _http("POST", "/messages", i.model_dump(), c),
                "delete": lambda i, c: _http("DELETE", f"/customers/{i.customer}", {}, c),
            },
            "product": {
                "price": lambda i, c: _http("PUT", f"/products/{i.sku}/price", i.model_dump(), c),
                "import": lambda i, c: _found("GET", f"/products/{i.id}", i.id, c),
                "read": lambda i, c: _found("GET", f"/products/{i.id}", i.id, c),
                "create": lambda i, c: _created(_http("POST", "/products", _vendor_product(i.desired), c),
                                                product.import_id(i.desired)),
                "update": lambda i, c: _created(_http("PATCH", f"/products/{i.id}", _vendor_product(i.changes), c),
                                                i.id),
                "delete": lambda i, c: _deleted(f"/products/{i.id}", i.id, c),
            },
            "staff": {"grant": lambda i, c: _http("POST", "/staff/roles", i.model_dump(), c)},
            "staff_role": {
                "import": lambda i, c: _found("GET", _role_path(i.id), i.id, c),
                "read": lambda i, c: _found("GET", _role_path(i.id), i.id, c),
                "create": lambda i, c: _created(
                    _http("POST", "/staff/roles", {"username": i.desired["user"], "role": i.desired["role"]}, c),
                    staff_role.import_id(i.desired)),
                "update": lambda i, c: _found("GET", _role_path(i.id), i.id, c),  # every field is its identity
                "delete": lambda i, c: _deleted(_role_path(i.id), i.id, c),
            },
            "webhook": {
                "import": lambda i, c: _found("GET", f"/webhooks/by-url?url={urllib.parse.quote(i.id, safe='')}",
                                              i.id, c),
                "read": lambda i, c: _found("GET", f"/webhooks/{i.handle}", i.id, c) if i.handle else _found(
                    "GET", f"/webhooks/by-url?url={urllib.parse.quote(i.id, safe='')}", i.id, c),
                "create": lambda i, c: _created(
                    _http("POST", "/webhooks", {"url": i.desired["url"], "events": i.desired["events"],
                                                "secret": i.desired["signing_secret"]}, c),
                    webhook.import_id(i.desired)),
                "update": _webhook_update,
                "delete": _webhook_delete,
            },
        },
    )
