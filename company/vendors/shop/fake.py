"""The shop's fake: orders, refunds, shipments, the catalog, staff roles and webhooks kept in a
state file, for tests, scenarios and the demo."""
from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from company.vendors.shop.connector import shop
from company.vendors.shop.driver import _gone
from company.vendors.shop.models import (
    Deletion,
    Grant,
    Notice,
    OrderRef,
    PriceChange,
    RefundQuery,
    RefundRequest,
    ShipmentRequest,
)
from company.vendors.shop.resources import product, staff_role, webhook
from runs.authoring import (
    CallContext,
    DriverError,
    define_fake,
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
