"""A vendor that ignores idempotency keys, as the in-doubt tests need one: a payment sent twice is
paid twice. `bank_setup` declares it under a name, with or without the read that tells whether a
payment happened (`reconcile`), and a fake that records each payment with its order and the key
the engine sent, so a test can count what the vendor saw.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from connectors import define_connector, op, with_setup
from connectors.fakes import define_fake


class Pay(BaseModel):
    order: str
    cents: int


class Paid(BaseModel):
    payment_id: str


class Found(BaseModel):
    happened: bool
    output: Paid | None = None


def bank_setup(vendor: str, *, reconcile: bool = False, find_by: Literal["order", "key"] = "order",
               timeout: float | None = None) -> Any:
    """The connector `vendor` (`payment.create`, money, keys ignored; with `reconcile`, `payment.find`
    answers whether a payment of that order, or of the call's idempotency key, was made) and its fake."""
    create = op(effect="money", input=Pay, output=Paid, idempotency_key="ignored",
                reconcile="find" if reconcile else None, timeout=timeout)
    ops: dict[str, Any] = {"create": create}
    if reconcile:
        ops["find"] = op(effect="read", input=Pay, output=Found, idempotent=True)
    connector = define_connector(vendor, {"payment": ops})

    def pay(state, i, c):
        state["payments"].append({"order": i.order, "cents": i.cents, "key": c.idempotency_key})
        return {"payment_id": f"pay_{len(state['payments'])}"}

    def find(state, i, c):
        for n, payment in enumerate(state["payments"], start=1):
            if payment[find_by] == (i.order if find_by == "order" else c.idempotency_key):
                return {"happened": True, "output": {"payment_id": f"pay_{n}"}}
        return {"happened": False}

    def fake(file=None):
        handlers = {"create": pay, **({"find": find} if reconcile else {})}
        return define_fake(connector, initial=lambda: {"payments": []}, ops={"payment": handlers}, file=file)

    return with_setup(connector, fake=fake)
