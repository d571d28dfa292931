"""Refund a card payment through Stripe: read the payment, refund it (the policy holds money for
finance), and answer what Stripe refunded. Stripe honours the call's idempotency key, so a refund
tried again after a lost answer is still one refund."""
from pydantic import BaseModel, Field

from connectors.vendors.stripe import PaymentIntentRef, RefundCreate, stripe
from runs.authoring import Ctx, define_workflow


class RefundPaymentInput(BaseModel):
    payment_intent: str = Field(pattern=r"^pi_[A-Za-z0-9_]+$", description="the payment to refund (pi_...)")
    # The refund's own rule: above Stripe's largest amount, the run is refused before it starts.
    amount: int = stripe.op("stripe.refund.create").amount_field(gt=0, description="in cents")
    currency: str = Field(default="EUR", pattern=r"^[A-Z]{3}$")


def run(ctx: Ctx, input: RefundPaymentInput):
    payment = ctx.stripe.payment_intent.get(PaymentIntentRef(id=input.payment_intent))
    ctx.tag(payment=payment.id)
    refund = ctx.stripe.refund.create(RefundCreate(payment_intent=payment.id, amount=input.amount,
                                                   currency=input.currency, reason="requested_by_customer"))
    return {"refund_id": refund.id, "amount": refund.amount, "currency": refund.currency}


refund_payment = define_workflow(
    name="refund-payment",
    title="Refund a card payment through Stripe",
    input=RefundPaymentInput,
    run=run,
)
