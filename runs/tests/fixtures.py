"""A small vendor for the engine's tests: a shop whose fake keeps orders, refunds and messages."""
from __future__ import annotations

from pydantic import BaseModel, Field

from connectors import DriverError, define_connector, op, with_setup
from connectors.fakes import define_fake
from runs.authoring import define_workflow


class OrderRef(BaseModel):
    order_id: str = Field(min_length=1)


class Order(BaseModel):
    order_id: str
    total: int
    handle: str = ""


class RefundIn(BaseModel):
    order_id: str = Field(min_length=1)
    amount: int = Field(gt=0)


class RefundOut(BaseModel):
    refund_id: str
    amount: int


class Note(BaseModel):
    to: str
    text: str = ""


class NoteOut(BaseModel):
    id: str


class Post(BaseModel):
    text: str


class Posted(BaseModel):
    id: str
    handle: str = ""


vendor = define_connector(
    "acme",
    {
        "order": {
            "get": op(effect="read", input=OrderRef, output=Order, idempotent=True,
                      target=lambda i: f"order/{i.order_id}", opaque=("handle",)),
            "refund": op(effect="money", input=RefundIn, output=RefundOut, target=lambda i: f"order/{i.order_id}"),
        },
        "mail": {"send": op(effect="send", input=Note, output=NoteOut)},
        "post": {
            "publish": op(effect="publish", input=Post, output=Posted, idempotent=True, opaque=("handle",)),
        },
    },
)


def _get(state, i, c):
    order = state["orders"].get(i.order_id)
    if order is None:
        raise DriverError(f"no order {i.order_id}", retryable=False, status=404, vendor_code="not_found")
    return {**order, "handle": f"h-{i.order_id}"}


def _refund(state, i, c):
    state["refunds"].append({"order_id": i.order_id, "amount": i.amount, "key": c.idempotency_key})
    return {"refund_id": f"re_{len(state['refunds'])}", "amount": i.amount}


def _send(state, i, c):
    state["mail"].append({"to": i.to, "text": i.text})
    return {"id": f"m{len(state['mail'])}"}


def _publish(state, i, c):
    state["posts"].append(i.text)
    return {"id": f"p{len(state['posts'])}", "handle": "secret-handle"}


def make_fake(file=None):
    return define_fake(
        vendor,
        initial=lambda: {"orders": {"1": {"order_id": "1", "total": 100}, "2": {"order_id": "2", "total": 5000}},
                         "refunds": [], "mail": [], "posts": []},
        ops={"order": {"get": _get, "refund": _refund}, "mail": {"send": _send}, "post": {"publish": _publish}},
        file=file,
    )


acme = with_setup(vendor, fake=make_fake)
GET, REFUND, SEND, PUBLISH = (acme.op(f"acme.{x}") for x in ("order.get", "order.refund", "mail.send", "post.publish"))


class Label(BaseModel):
    label: str = "x"


def _tagged_two_calls(ctx, input: Label):
    ctx.tag(order=input.label)
    posted = ctx.acme.post.publish({"text": input.label})
    ctx.acme.mail.send({"to": "a", "text": posted.id})
    return {"ok": True}


# A run tagged with its label that publishes, then mails (steps 1, 2, 3): the recovery tests' workload.
TAGGED_FLOW = define_workflow(name="flow", input=Label, uses=[PUBLISH, SEND], run=_tagged_two_calls)


class Steps(BaseModel):
    n: int = 0


def _n_calls(ctx: object, input: Steps) -> dict[str, int]:
    for _ in range(input.n):
        ctx.acme.order.get({"order_id": "1"})  # type: ignore[attr-defined]
    return {"done": input.n}


# `n` calls of acme.order.get, then {"done": n}: the runs the transaction and statement tests count.
CALLS = define_workflow(name="calls", input=Steps, uses=[GET], run=_n_calls)
