"""The shop the example company sells through: orders, refunds, shipments, customers and staff access.

Its resource types, declared in the company's `resources/` files: `shop.product` (the catalog:
title, price, tags), `shop.staff_role` (a person's role in the shop admin) and `shop.webhook`
(where the shop posts its events, signed with a secret it never shows back).
"""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from runs.authoring import (
    CallContext,
    DriverError,
    VendorInfo,
    define_connector,
    define_driver,
    define_fake,
    define_resource,
    op,
    with_setup,
)


class OrderRef(BaseModel):
    order_id: str = Field(min_length=1)


class Order(BaseModel):
    order_id: str
    customer: str
    total_cents: int
    refunded_cents: int = 0
    status: str


class RefundRequest(BaseModel):
    order_id: str = Field(min_length=1)
    amount_cents: int = Field(gt=0)
    reason: str = ""


class Refund(BaseModel):
    refund_id: str
    order_id: str
    amount_cents: int


class Notice(BaseModel):
    customer: str = Field(min_length=1)
    subject: str = Field(min_length=1)
    body: str = ""


class Sent(BaseModel):
    message_id: str


class PriceChange(BaseModel):
    sku: str = Field(min_length=1)
    price_cents: int = Field(gt=0)


class Product(BaseModel):
    sku: str
    price_cents: int


class Grant(BaseModel):
    username: str = Field(min_length=1)
    role: str = Field(min_length=1)


class Granted(BaseModel):
    username: str
    role: str


class RefundQuery(BaseModel):
    limit: int = Field(default=100, ge=1, le=1000)


class RefundList(BaseModel):
    refunds: list[dict[str, Any]]
    total_cents: int


class ShipmentRequest(BaseModel):
    order_id: str = Field(min_length=1)
    carrier: Literal["posti", "dhl"] = "posti"


class Shipment(BaseModel):
    shipment_id: str
    order_id: str
    carrier: str
    tracking: str


class FoundShipment(BaseModel):
    """What the carrier's lookup says about a booking: whether it was made, and the booking."""

    happened: bool
    output: Shipment | None = None


class Deletion(BaseModel):
    customer: str = Field(min_length=1)


class Deleted(BaseModel):
    customer: str
    deleted: bool


# --- resource types ----------------------------------------------------------------------------


class ProductFields(BaseModel):
    sku: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str = Field(min_length=1)
    price_cents: int = Field(gt=0)
    currency: Literal["EUR", "USD"] = "EUR"
    tags: list[str] = Field(default_factory=list)
    created_at: str | None = None


def _product_values(vendor: Mapping[str, Any]) -> dict[str, Any]:
    """The shop's product (`name`, `price: {amount, currency}`) in the declared shape."""
    price = vendor.get("price") or {}
    return {"sku": vendor.get("sku"), "title": vendor.get("name"), "price_cents": price.get("amount"),
            "currency": price.get("currency"), "tags": list(vendor.get("tags") or []),
            "created_at": vendor.get("created_at")}


product = define_resource(
    type="product",
    title="Product",
    identity="sku",
    schema=ProductFields,
    fields={
        "currency": {"immutable": True},
        "tags": {"unordered": True},
        "created_at": {"vendor_owned": True},
    },
    find=lambda desired: desired["sku"],
    normalize=_product_values,
    effects={"create": "publish", "update": "publish", "delete": "publish"},
    description="A product in the shop's catalog; changing its price publishes it",
)


class StaffRoleFields(BaseModel):
    user: str = Field(min_length=1)
    role: Literal["support", "finance", "admin", "viewer"]


staff_role = define_resource(
    type="staff_role",
    title="Staff role",
    identity=("user", "role"),
    schema=StaffRoleFields,
    fields={"user": {"references": "sanoma.person", "by": "username"}},
    find=lambda desired: f"{desired['user']}:{desired['role']}",
    normalize=lambda vendor: {"user": vendor.get("username"), "role": vendor.get("role")},  # the shop says username
    effects={"create": "access", "update": "access", "delete": "access"},
    description="A person's role in the shop admin",
)

WebhookEvent = Literal["order.paid", "order.refunded", "product.updated"]


class WebhookFields(BaseModel):
    url: str = Field(pattern=r"^https://[^\s/]+(/\S*)?$")
    events: list[WebhookEvent] = Field(min_length=1)
    signing_secret: str = Field(min_length=16)


webhook = define_resource(
    type="webhook",
    title="Webhook",
    identity="url",
    schema=WebhookFields,
    fields={"events": {"unordered": True}, "signing_secret": {"write_only": True}},
    find=lambda desired: desired["url"],
    description="Where the shop posts its events, signed with a secret it never shows back",
)

LOGO = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
        '<rect width="16" height="16" rx="3" fill="#2b6"/></svg>')

class ShopEnvironment(BaseModel):
    """What the shop's real driver reads (a worker on the shop's fake needs none of it)."""

    SHOP_API_URL: str = Field(description="the shop's API base URL")
    SHOP_API_KEY: str = Field(min_length=16, description="an API key with order and staff scopes")
    SHOP_WEBHOOK_SECRET: str | None = Field(
        default=None, min_length=16,
        description='what the shop signs its webhooks with (data files: secret("SHOP_WEBHOOK_SECRET"))')

    @field_validator("SHOP_API_URL")
    @classmethod
    def _https(cls, value: str) -> str:
        if not value.startswith("https://"):
            raise ValueError("must be an https:// URL")
        return value


# The most one refund may move: the shop sells in euros, and no order of the shop comes near this.
REFUND_CEILING_CENTS = 1_000_000  # 10,000.00 EUR

# Each operation says in a sentence what one call does, for whoever is asked to approve it.
shop = define_connector(
    "shop",
    {
        "order": {
            "get": op(effect="read", input=OrderRef, output=Order, idempotent=True,
                      target=lambda i: f"order/{i.order_id}", description="Read an order",
                      summary="Read order {order_id}", given="order {order_id} exists"),
            "refund": op(effect="money", input=RefundRequest, output=Refund,
                         target=lambda i: f"order/{i.order_id}", description="Refund part or all of an order",
                         amount="amount_cents", currency="EUR", ceiling=REFUND_CEILING_CENTS,
                         summary="Refund {amount_cents:money} on order {order_id}",
                         expect="order {order_id} was refunded {amount_cents}"),
        },
        "refund": {
            "list": op(effect="read", input=RefundQuery, output=RefundList, idempotent=True,
                       description="List the latest refunds", summary="List the latest {limit} refunds"),
        },
        # The carrier books a pickup for every call it gets (it ignores idempotency keys): a booking
        # whose reply was lost is never sent again blindly; the run asks the carrier's lookup
        # (`find`) whether it was made, and waits for an operator when the lookup cannot say.
        "shipment": {
            "book": op(effect="write", input=ShipmentRequest, output=Shipment, idempotency_key="ignored",
                       reconcile="find", target=lambda i: f"order/{i.order_id}",
                       description="Book the carrier's pickup of an order",
                       summary="Book {carrier} to pick up order {order_id}",
                       expect="order {order_id} was booked with {carrier}"),
            "find": op(effect="read", input=ShipmentRequest, output=FoundShipment, idempotent=True,
                       target=lambda i: f"order/{i.order_id}", description="Look up the carrier's booking of an order",
                       summary="Look up {carrier}'s booking of order {order_id}"),
        },
        "customer": {
            "notify": op(effect="send", input=Notice, output=Sent, description="Email a customer",
                         summary="Email {customer}: {subject}", expect="{customer} was told {subject}"),
            "delete": op(effect="write", input=Deletion, output=Deleted, description="Erase a customer's data",
                         summary="Erase the data of customer {customer}"),
        },
        "product": {
            "price": op(effect="publish", input=PriceChange, output=Product, idempotent=True,
                        target=lambda i: f"product/{i.sku}", description="Publish a new price",
                        summary="Publish {price_cents:money} as the price of {sku}"),
        },
        "staff": {
            "grant": op(effect="access", input=Grant, output=Granted,
                        description="Give a person a role in the shop admin",
                        summary="Give {username} the role {role} in the shop admin"),
        },
    },
    info=VendorInfo(title="Shop", logo=LOGO, homepage="https://shop.example.com"),
    environment=ShopEnvironment,
    types=[product, staff_role, webhook],
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


def _order(state: dict, order_id: str) -> dict:
    order = state["orders"].get(order_id)
    if order is None:
        raise DriverError(f"no order {order_id}", retryable=False, status=404, vendor_code="not_found")
    return order


def _get(state: dict, i: OrderRef, c: CallContext) -> dict:
    return dict(_order(state, i.order_id))


def _refund(state: dict, i: RefundRequest, c: CallContext) -> dict:
    order = _order(state, i.order_id)
    if order["refunded_cents"] + i.amount_cents > order["total_cents"]:
        raise DriverError(f"order {i.order_id} cannot be refunded {i.amount_cents}: only "
                          f"{order['total_cents'] - order['refunded_cents']} left", retryable=False, status=422,
                          vendor_code="over_refund")
    order["refunded_cents"] += i.amount_cents
    order["status"] = "refunded" if order["refunded_cents"] == order["total_cents"] else "partly_refunded"
    refund = {"refund_id": f"re_{len(state['refunds']) + 1}", "order_id": i.order_id, "amount_cents": i.amount_cents}
    state["refunds"].append(refund)
    return refund


def _book(state: dict, i: ShipmentRequest, c: CallContext) -> dict:
    _order(state, i.order_id)
    shipments = state.setdefault("shipments", [])
    n = len(shipments) + 1
    shipment = {"shipment_id": f"sh_{n}", "order_id": i.order_id, "carrier": i.carrier,
                "tracking": f"{i.carrier.upper()}{1000 + n}"}
    shipments.append(shipment)
    return shipment


def _find_shipment(state: dict, i: ShipmentRequest, c: CallContext) -> dict:
    for shipment in state.get("shipments", []):
        if shipment["order_id"] == i.order_id and shipment["carrier"] == i.carrier:
            return {"happened": True, "output": shipment}
    return {"happened": False}


def _list_refunds(state: dict, i: RefundQuery, c: CallContext) -> dict:
    refunds = state["refunds"][-i.limit:]
    return {"refunds": refunds, "total_cents": sum(r["amount_cents"] for r in refunds)}


def _notify(state: dict, i: Notice, c: CallContext) -> dict:
    message = {"message_id": f"msg_{len(state['messages']) + 1}", **i.model_dump()}
    state["messages"].append(message)
    return {"message_id": message["message_id"]}


def _delete(state: dict, i: Deletion, c: CallContext) -> dict:
    state["customers"] = [x for x in state["customers"] if x != i.customer]
    return {"customer": i.customer, "deleted": True}


def _price(state: dict, i: PriceChange, c: CallContext) -> dict:
    state["products"][i.sku] = i.price_cents
    return {"sku": i.sku, "price_cents": i.price_cents}


def _grant(state: dict, i: Grant, c: CallContext) -> dict:
    state["staff"].append({"username": i.username, "role": i.role})
    return i.model_dump()


def _not_found(what: str) -> DriverError:
    return DriverError(f"no {what}", retryable=False, status=404, vendor_code="not_found")


def _exists(what: str) -> DriverError:
    return DriverError(f"{what} already exists", retryable=False, status=409, vendor_code="exists")


def _stamp() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _next_id(state: dict, prefix: str) -> str:
    state["next_id"] = state.get("next_id", 1) + 1
    return f"{prefix}_{state['next_id'] - 1}"


def _product_view(state: dict, sku: str) -> dict | None:
    """The shop's product: its catalog entry with the price `shop.product.price` publishes."""
    entry = state["catalog"].get(sku)
    if entry is None or sku not in state["products"]:
        return None
    return {**entry, "price": {"amount": state["products"][sku], "currency": entry["currency"]}}


def _product_observed(state: dict, sku: str) -> dict:
    view = _product_view(state, sku)
    return _gone(sku) if view is None else {"id": sku, "handle": view["id"], "values": view}


def _product_look(state: dict, i: Any, c: CallContext) -> dict:
    return _product_observed(state, i.id)


def _product_create(state: dict, i: Any, c: CallContext) -> dict:
    sku = product.import_id(i.desired)
    if sku in state["catalog"]:
        raise _exists(f"product {sku}")
    d = i.desired
    state["catalog"][sku] = {"id": _next_id(state, "prod"), "sku": sku, "name": d["title"],
                             "currency": d.get("currency", "EUR"), "tags": list(d.get("tags", [])),
                             "created_at": _stamp()}
    state["products"][sku] = d["price_cents"]
    return _product_observed(state, sku)


def _product_update(state: dict, i: Any, c: CallContext) -> dict:
    entry = state["catalog"].get(i.id)
    if entry is None:
        raise _not_found(f"product {i.id}")
    if "title" in i.changes:
        entry["name"] = i.changes["title"]
    if "tags" in i.changes:
        entry["tags"] = list(i.changes["tags"])
    if "price_cents" in i.changes:
        state["products"][i.id] = i.changes["price_cents"]
    return _product_observed(state, i.id)


def _product_delete(state: dict, i: Any, c: CallContext) -> dict:
    state["catalog"].pop(i.id, None)
    state["products"].pop(i.id, None)
    return _gone(i.id)


def _role_observed(state: dict, id: str) -> dict:
    user, _, role = id.rpartition(":")
    held = {"username": user, "role": role}
    return {"id": id, "handle": id, "values": held} if held in state["staff"] else _gone(id)


def _role_look(state: dict, i: Any, c: CallContext) -> dict:
    return _role_observed(state, i.id)


def _role_create(state: dict, i: Any, c: CallContext) -> dict:
    id = staff_role.import_id(i.desired)
    if _role_observed(state, id).get("handle"):
        raise _exists(f"the role {i.desired['role']} of {i.desired['user']}")
    state["staff"].append({"username": i.desired["user"], "role": i.desired["role"]})
    return _role_observed(state, id)


def _role_update(state: dict, i: Any, c: CallContext) -> dict:
    found = _role_observed(state, i.id)  # every field is its identity: nothing changes in place
    if found.get("gone"):
        raise _not_found(f"staff role {i.id}")
    return found


def _role_delete(state: dict, i: Any, c: CallContext) -> dict:
    user, _, role = i.id.rpartition(":")
    state["staff"] = [s for s in state["staff"] if s != {"username": user, "role": role}]
    return _gone(i.id)


def _hook_entry(state: dict, i: Any) -> dict | None:
    hooks = state["webhooks"]
    if getattr(i, "handle", None):
        entry = hooks.get(i.handle)
        return entry if entry is not None and entry["url"] == i.id else None
    return next((h for h in hooks.values() if h["url"] == i.id), None)


def _hook_observed(i: Any, entry: dict | None) -> dict:
    if entry is None:
        return _gone(i.id)
    return {"id": entry["url"], "handle": entry["id"],
            "values": {k: v for k, v in entry.items() if k != "secret"}}  # the secret is never shown


def _hook_look(state: dict, i: Any, c: CallContext) -> dict:
    return _hook_observed(i, _hook_entry(state, i))


def _hook_create(state: dict, i: Any, c: CallContext) -> dict:
    url = webhook.import_id(i.desired)
    if any(h["url"] == url for h in state["webhooks"].values()):
        raise _exists(f"a webhook to {url}")
    handle = _next_id(state, "wh")
    state["webhooks"][handle] = {"id": handle, "url": url, "events": list(i.desired["events"]),
                                 "secret": i.desired["signing_secret"], "created_at": _stamp()}
    return _hook_observed(i, state["webhooks"][handle])


def _hook_update(state: dict, i: Any, c: CallContext) -> dict:
    entry = _hook_entry(state, i)
    if entry is None:
        raise _not_found(f"webhook {i.id}")
    if "events" in i.changes:
        entry["events"] = list(i.changes["events"])
    if "signing_secret" in i.changes:
        entry["secret"] = i.changes["signing_secret"]
    return _hook_observed(i, entry)


def _hook_delete(state: dict, i: Any, c: CallContext) -> dict:
    entry = _hook_entry(state, i)
    if entry is not None:
        del state["webhooks"][entry["id"]]
    return _gone(i.id)


def initial_state() -> dict:
    return {
        "orders": {
            "1001": {"order_id": "1001", "customer": "ada@example.com", "total_cents": 4500, "refunded_cents": 0,
                     "status": "paid"},
            "1002": {"order_id": "1002", "customer": "grace@example.com", "total_cents": 120000, "refunded_cents": 0,
                     "status": "paid"},
        },
        "refunds": [],
        "shipments": [],
        "messages": [],
        "customers": ["ada@example.com", "grace@example.com"],
        "products": {"mug": 1500, "tee": 2500, "cap": 1800},
        # The catalog behind the prices: what `shop.product` reads, beside `products` (sku -> price).
        "catalog": {
            sku: {"id": f"prod_{n}", "sku": sku, "name": name, "currency": "EUR", "tags": tags,
                  "created_at": "2026-01-05T09:00:00Z"}
            for n, (sku, name, tags) in enumerate([("mug", "Mug", ["kitchen"]), ("tee", "T-shirt", ["apparel"]),
                                                   ("cap", "Cap", ["apparel"])], start=1)
        },
        "staff": [],
        "webhooks": {},
        "next_id": 4,
    }


def make_fake(file: Path | None = None):
    return define_fake(
        shop,
        initial=initial_state,
        ops={
            "order": {"get": _get, "refund": _refund},
            "refund": {"list": _list_refunds},
            "shipment": {"book": _book, "find": _find_shipment},
            "customer": {"notify": _notify, "delete": _delete},
            "product": {"price": _price, "import": _product_look, "read": _product_look, "create": _product_create,
                        "update": _product_update, "delete": _product_delete},
            "staff": {"grant": _grant},
            "staff_role": {"import": _role_look, "read": _role_look, "create": _role_create, "update": _role_update,
                           "delete": _role_delete},
            "webhook": {"import": _hook_look, "read": _hook_look, "create": _hook_create, "update": _hook_update,
                        "delete": _hook_delete},
        },
        file=file,
    )


# The halves attach to `shop` itself: every module importing it sees them.
with_setup(shop, driver=make_driver, fake=make_fake)
