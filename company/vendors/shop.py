"""The shop the example company sells through: orders, refunds, customers and staff access."""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from connectors import (
    CallContext,
    DriverError,
    VendorInfo,
    define_connector,
    define_driver,
    op,
    retryable_status,
    with_setup,
)
from connectors.fakes import define_fake


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


class Deletion(BaseModel):
    customer: str = Field(min_length=1)


class Deleted(BaseModel):
    customer: str
    deleted: bool


LOGO = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
        '<rect width="16" height="16" rx="3" fill="#2b6"/></svg>')

shop = define_connector(
    "shop",
    {
        "order": {
            "get": op(effect="read", input=OrderRef, output=Order, idempotent=True,
                      target=lambda i: f"order/{i.order_id}", description="Read an order",
                      given="order {order_id} exists"),
            "refund": op(effect="money", input=RefundRequest, output=Refund,
                         target=lambda i: f"order/{i.order_id}", description="Refund part or all of an order",
                         expect="order {order_id} was refunded {amount_cents}"),
        },
        "refund": {
            "list": op(effect="read", input=RefundQuery, output=RefundList, idempotent=True,
                       description="List the latest refunds"),
        },
        "customer": {
            "notify": op(effect="send", input=Notice, output=Sent, description="Email a customer",
                         expect="{customer} was told {subject}"),
            "delete": op(effect="write", input=Deletion, output=Deleted, description="Erase a customer's data"),
        },
        "product": {
            "price": op(effect="publish", input=PriceChange, output=Product, idempotent=True,
                        target=lambda i: f"product/{i.sku}", description="Publish a new price"),
        },
        "staff": {
            "grant": op(effect="access", input=Grant, output=Granted,
                        description="Give a person a role in the shop admin"),
        },
    },
    info=VendorInfo(title="Shop", logo=LOGO, homepage="https://shop.example.com"),
)


def _http(method: str, path: str, payload: dict[str, Any], context: CallContext) -> dict[str, Any]:
    """The shop's HTTP API; credentials are read when called, never from the config."""
    base = os.environ.get("SHOP_API_URL")
    key = os.environ.get("SHOP_API_KEY")
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
        with urllib.request.urlopen(request, timeout=30) as reply:
            return json.loads(reply.read() or b"{}")
    except urllib.error.HTTPError as err:
        raise DriverError(f"shop answered {err.code} to {method} {path}", retryable=retryable_status(err.code),
                          status=err.code) from None
    except (urllib.error.URLError, TimeoutError) as err:
        raise DriverError(f"shop could not be reached: {err}", retryable=True) from None


def make_driver():
    return define_driver(
        shop,
        {
            "order": {
                "get": lambda i, c: _http("GET", f"/orders/{i.order_id}", {}, c),
                "refund": lambda i, c: _http("POST", f"/orders/{i.order_id}/refunds", i.model_dump(), c),
            },
            "refund": {"list": lambda i, c: _http("GET", f"/refunds?limit={i.limit}", {}, c)},
            "customer": {
                "notify": lambda i, c: _http("POST", "/messages", i.model_dump(), c),
                "delete": lambda i, c: _http("DELETE", f"/customers/{i.customer}", {}, c),
            },
            "product": {"price": lambda i, c: _http("PUT", f"/products/{i.sku}/price", i.model_dump(), c)},
            "staff": {"grant": lambda i, c: _http("POST", "/staff/roles", i.model_dump(), c)},
        },
        env={"SHOP_API_URL": "The shop API's base URL", "SHOP_API_KEY": "An API key with order and staff scopes"},
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


def initial_state() -> dict:
    return {
        "orders": {
            "1001": {"order_id": "1001", "customer": "ada@example.com", "total_cents": 4500, "refunded_cents": 0,
                     "status": "paid"},
            "1002": {"order_id": "1002", "customer": "grace@example.com", "total_cents": 120000, "refunded_cents": 0,
                     "status": "paid"},
        },
        "refunds": [],
        "messages": [],
        "customers": ["ada@example.com", "grace@example.com"],
        "products": {"mug": 1500, "tee": 2500, "cap": 1800},
        "staff": [],
    }


def make_fake(file: Path | None = None):
    return define_fake(
        shop,
        initial=initial_state,
        ops={
            "order": {"get": _get, "refund": _refund},
            "refund": {"list": _list_refunds},
            "customer": {"notify": _notify, "delete": _delete},
            "product": {"price": _price},
            "staff": {"grant": _grant},
        },
        file=file,
    )


shop = with_setup(shop, driver=make_driver, fake=make_fake)
