"""Stripe's fake: payment intents, refunds, products and webhook endpoints kept in a state file, for
tests, scenarios and the demo. It answers as Stripe does: a repeated idempotency key gets the first
answer (the fake's own bookkeeping), a refund past what is left of a payment is refused with
Stripe's codes (`charge_already_refunded`, `amount_too_large`), an unknown object is `404
resource_missing`, and a webhook endpoint's signing secret is never shown back. Its refusals say
what the real driver says of Stripe's answer to the same request, word for word (`wording.py`):
`stripe answered 404 to GET /v1/payment_intents/pi_9 (invalid_request_error resource_missing): No
such payment_intent: 'pi_9'`.

Its state:

    {"payment_intents": {"pi_...": {id, amount, amount_received, amount_refunded, currency, status,
                                    customer, latest_charge}},
     "refunds": [{id, amount, currency, payment_intent, status, reason}],   # oldest first
     "product": {"<id>": {"handle": id, "values": {...}}},
     "webhook_endpoint": {"<url>": {"handle": "we_...", "values": {...}}},
     "next_id": 1}
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from connectors import CallContext, DriverError, define_fake
from connectors.vendors.stripe.connector import stripe
from connectors.vendors.stripe.models import (
    PaymentIntentCreate,
    PaymentIntentRef,
    RefundCreate,
    RefundQuery,
    RefundRef,
)
from connectors.vendors.stripe.resources import product, webhook_endpoint
from connectors.vendors.stripe.wording import (
    already_refunded,
    driver_message,
    no_such,
    not_refundable,
    refund_too_large,
)


def initial_state() -> dict[str, Any]:
    """A test-mode account with two card payments made (the demo refunds them): `pi_1001` of 45.00 EUR
    and `pi_1002` of 1,200.00 EUR. A scenario's Given adds others or sets these afresh."""
    state: dict[str, Any] = {"payment_intents": {}, "refunds": [], "product": {}, "webhook_endpoint": {},
                             "next_id": 1}
    paid(state, id="pi_1001", amount=4500, customer="ada@example.com")
    paid(state, id="pi_1002", amount=120000, customer="grace@example.com")
    return state


REFUNDS = "POST /v1/refunds"


def _next(state: dict, prefix: str) -> str:
    n = state.get("next_id", 1)
    state["next_id"] = n + 1
    return f"{prefix}_{n:06d}"


def _refused(what: str, message: str, *, status: int = 400, vendor_code: str) -> DriverError:
    """Stripe's `invalid_request_error` answer to `what` (`POST /v1/refunds`), as the driver reports it."""
    return DriverError(driver_message(status, what, "invalid_request_error", vendor_code, message),
                       status=status, vendor_code=vendor_code, retryable=False)


def _intent(state: dict, id: str) -> dict[str, Any]:
    """The payment intent `id`, as `GET /v1/payment_intents/{id}` reads it (the driver reads it before a refund)."""
    found = state["payment_intents"].get(id)
    if found is None:
        raise _refused(f"GET /v1/payment_intents/{id}", no_such("payment_intent", id), status=404,
                       vendor_code="resource_missing")
    return found


def paid(state: dict, *, id: str, amount: int, currency: str = "EUR", customer: str | None = None) -> dict[str, Any]:
    """A succeeded card payment in the fake's state (what a scenario's Given sets up)."""
    intent = {"id": id, "amount": amount, "amount_received": amount, "amount_refunded": 0,
              "currency": currency.upper(), "status": "succeeded", "customer": customer,
              "latest_charge": "ch_" + id.removeprefix("pi_")}
    state.setdefault("payment_intents", {})[id] = intent
    return intent


def _intent_out(intent: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in intent.items() if k != "amount_refunded"}


def _create_refund(state: dict, i: RefundCreate, c: CallContext) -> dict[str, Any]:
    intent = _intent(state, i.payment_intent)
    if intent["status"] != "succeeded":
        raise _refused(REFUNDS, not_refundable(intent["id"]), vendor_code="charge_not_refundable")
    if intent["currency"] != i.currency:
        raise DriverError(f"stripe: payment {intent['id']} is in {intent['currency']}, not {i.currency}: the refund "
                          f"was not sent", retryable=False, vendor_code="currency_mismatch")
    left = intent["amount_received"] - intent["amount_refunded"]
    if left <= 0:
        raise _refused(REFUNDS, already_refunded(intent["latest_charge"]), vendor_code="charge_already_refunded")
    if i.amount > left:
        raise _refused(REFUNDS, refund_too_large(i.amount, left, intent["currency"]), vendor_code="amount_too_large")
    intent["amount_refunded"] += i.amount
    refund = {"id": _next(state, "re"), "amount": i.amount, "currency": intent["currency"],
              "payment_intent": intent["id"], "status": "succeeded", "reason": i.reason}
    state["refunds"].append(refund)
    return refund


def _get_refund(state: dict, i: RefundRef, c: CallContext) -> dict[str, Any]:
    found = next((r for r in state["refunds"] if r["id"] == i.id), None)
    if found is None:
        raise _refused(f"GET /v1/refunds/{i.id}", no_such("refund", i.id), status=404, vendor_code="resource_missing")
    return found


def _list_refunds(state: dict, i: RefundQuery, c: CallContext) -> dict[str, Any]:
    refunds = [r for r in reversed(state["refunds"]) if i.payment_intent in (None, r["payment_intent"])]
    return {"refunds": refunds, "total": sum(r["amount"] for r in refunds)}


def _create_payment_intent(state: dict, i: PaymentIntentCreate, c: CallContext) -> dict[str, Any]:
    id = _next(state, "pi")
    if i.confirm and i.payment_method:
        return _intent_out(paid(state, id=id, amount=i.amount, currency=i.currency, customer=i.customer))
    intent = {"id": id, "amount": i.amount, "amount_received": 0, "amount_refunded": 0, "currency": i.currency,
              "status": "requires_payment_method", "customer": i.customer, "latest_charge": None}
    state["payment_intents"][id] = intent
    return _intent_out(intent)


def _get_payment_intent(state: dict, i: PaymentIntentRef, c: CallContext) -> dict[str, Any]:
    return _intent_out(_intent(state, i.id))


# ---- products (by the id the company gives them) ------------------------------------------------


def _gone(id: str) -> dict[str, Any]:
    return {"id": id, "gone": True}


def _product_look(state: dict, i: Any, c: CallContext) -> dict[str, Any]:
    found = state["product"].get(i.id)
    return _gone(i.id) if found is None else {"id": i.id, "handle": found["handle"], "values": found["values"]}


def _product_create(state: dict, i: Any, c: CallContext) -> dict[str, Any]:
    id = product.import_id(i.desired)
    if id in state["product"]:
        raise _refused("POST /v1/products", "Product already exists.", vendor_code="resource_already_exists")
    values = {"id": id, "object": "product", "name": i.desired["name"],
              "description": i.desired.get("description") or None, "active": i.desired.get("active", True),
              "metadata": dict(i.desired.get("metadata") or {}), "created": 1767225600}
    state["product"][id] = {"handle": id, "values": values}
    return {"id": id, "handle": id, "values": values}


def _product_update(state: dict, i: Any, c: CallContext) -> dict[str, Any]:
    found = state["product"].get(i.id)
    if found is None:  # as the driver says it (it reads the product first)
        raise DriverError(f"stripe: no product {i.id}", status=404, vendor_code="resource_missing", retryable=False)
    for name, value in i.changes.items():
        if name in ("name", "description", "active", "metadata"):
            found["values"][name] = (value or None) if name == "description" else value
    return {"id": i.id, "handle": found["handle"], "values": found["values"]}


def _product_delete(state: dict, i: Any, c: CallContext) -> dict[str, Any]:
    state["product"].pop(i.id, None)
    return _gone(i.id)


# ---- webhook endpoints (by URL; Stripe's id is the handle) ---------------------------------------


def _endpoint_look(state: dict, i: Any, c: CallContext) -> dict[str, Any]:
    found = state["webhook_endpoint"].get(i.id)
    if found is None or (getattr(i, "handle", None) and i.handle != found["handle"]):
        return _gone(i.id)
    return {"id": i.id, "handle": found["handle"], "values": found["values"]}


def _endpoint_create(state: dict, i: Any, c: CallContext) -> dict[str, Any]:
    url = webhook_endpoint.import_id(i.desired)
    handle = _next(state, "we")
    # Stripe makes a signing secret and shows it in this answer only; the fake keeps none to show.
    values = {"id": handle, "object": "webhook_endpoint", "url": url,
              "enabled_events": list(i.desired["enabled_events"]),
              "description": i.desired.get("description") or None, "status": "enabled"}
    state["webhook_endpoint"][url] = {"handle": handle, "values": values}
    return {"id": url, "handle": handle, "values": values}


def _endpoint_update(state: dict, i: Any, c: CallContext) -> dict[str, Any]:
    found = state["webhook_endpoint"].get(i.id)
    if found is None:
        raise DriverError(f"stripe: no webhook endpoint to {i.id}", status=404, vendor_code="resource_missing",
                          retryable=False)
    if "enabled_events" in i.changes:
        found["values"]["enabled_events"] = list(i.changes["enabled_events"])
    if "description" in i.changes:
        found["values"]["description"] = i.changes["description"] or None
    return {"id": i.id, "handle": found["handle"], "values": found["values"]}


def _endpoint_delete(state: dict, i: Any, c: CallContext) -> dict[str, Any]:
    state["webhook_endpoint"].pop(i.id, None)
    return _gone(i.id)


def make_fake(file: Path | None = None):
    return define_fake(
        stripe,
        initial=initial_state,
        ops={
            "refund": {"create": _create_refund, "get": _get_refund, "list": _list_refunds},
            "payment_intent": {"create": _create_payment_intent, "get": _get_payment_intent},
            "product": {"import": _product_look, "read": _product_look, "create": _product_create,
                        "update": _product_update, "delete": _product_delete},
            "webhook_endpoint": {"import": _endpoint_look, "read": _endpoint_look, "create": _endpoint_create,
                                 "update": _endpoint_update, "delete": _endpoint_delete},
        },
        file=file,
    )
