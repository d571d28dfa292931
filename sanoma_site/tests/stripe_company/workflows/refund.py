"""Refund a payment intent through Stripe (the config has no policy: every call is allowed)."""
from pydantic import BaseModel

from connectors.vendors.stripe import RefundCreate
from runs.authoring import Ctx, define_workflow


class RefundInput(BaseModel):
    payment_intent: str
    amount: int


def run(ctx: Ctx, input: RefundInput):
    made = ctx.stripe.refund.create(RefundCreate(payment_intent=input.payment_intent, amount=input.amount,
                                                 currency="EUR"))
    return {"refund": made.id, "amount": made.amount}


refund = define_workflow(name="stripe-refund", input=RefundInput, run=run)
