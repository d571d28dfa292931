"""Scenario steps of Stripe's own, on its fake (`with_setup(stripe, steps=STEPS)`):

    Given Stripe holds a card payment pi_1001 of 4500 EUR
    Then Stripe's payment pi_1001 has 3000 left to refund
    Then Stripe holds 1 refund of payment pi_1001

A plain list of `(keyword, expression, function)`, each function called as `function(world, *values)`.
"""
from __future__ import annotations

from typing import Any

from connectors.vendors.stripe.fake import paid


def _holds_payment(world: Any, id: str, amount: int, currency: str) -> None:
    if not id.startswith("pi_"):
        raise AssertionError(f"a payment intent's id starts with pi_; got {id!r}")
    world.fake("stripe").update(lambda state: paid(state, id=id, amount=amount, currency=currency) and None)


def _payment(world: Any, id: str) -> dict[str, Any]:
    intents = world.fake("stripe").state["payment_intents"]
    if id not in intents:
        raise AssertionError(f"Stripe's fake holds no payment {id}; it holds {', '.join(intents) or 'none'}")
    return intents[id]


def _left(world: Any, id: str, amount: int) -> None:
    intent = _payment(world, id)
    left = intent["amount_received"] - intent["amount_refunded"]
    assert left == amount, (f"payment {id} has {left} left to refund, not {amount} "
                            f"(refunded {intent['amount_refunded']})")


def _refunds(world: Any, count: int, id: str) -> None:
    _payment(world, id)
    found = [r for r in world.fake("stripe").state["refunds"] if r["payment_intent"] == id]
    assert len(found) == count, f"Stripe holds {len(found)} refund(s) of payment {id}, not {count}: {found}"


STEPS = [
    ("given", "Stripe holds a card payment {word} of {int} {word}", _holds_payment),
    ("then", "Stripe's payment {word} has {int} left to refund", _left),
    ("then", "Stripe holds {int} refund(s) of payment {word}", _refunds),
]
