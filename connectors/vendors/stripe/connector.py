"""Stripe's connector: refunds and payment intents (money: Stripe honours `Idempotency-Key`, so a
call tried again with the call's key takes effect once), the reads a workflow needs, and the
catalog's products and the account's webhook endpoints as resource types."""
from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from connectors import VendorInfo, define_connector, op
from connectors.vendors.stripe.models import (
    STRIPE_MAX_AMOUNT,
    PaymentIntent,
    PaymentIntentCreate,
    PaymentIntentRef,
    Refund,
    RefundCreate,
    RefundList,
    RefundQuery,
    RefundRef,
)
from connectors.vendors.stripe.resources import product, webhook_endpoint

LOGO = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
        '<rect width="16" height="16" rx="3" fill="#635bff"/>'
        '<path d="M7.6 6.3c0-.5.4-.7 1-.7.9 0 2 .3 2.9.8V3.8a7.7 7.7 0 0 0-2.9-.5C6.3 3.3 4.9 4.5 4.9 6.4'
        'c0 3 4.1 2.5 4.1 3.8 0 .5-.5.7-1.1.7-1 0-2.2-.4-3.1-.9v2.6c1 .5 2.1.7 3.1.7 2.4 0 4-1.2 4-3.1'
        '0-3.2-4.3-2.7-4.3-3.9z" fill="#fff"/></svg>')


class StripeEnvironment(BaseModel):
    """What Stripe's real driver reads (a worker on Stripe's fake needs none of it)."""

    STRIPE_API_KEY: str = Field(description="a secret or restricted API key (sk_... or rk_...) with refunds, "
                                            "payment intents, products and webhook endpoints")
    STRIPE_API_BASE: str | None = Field(default=None, description="another base URL for Stripe's API (a test "
                                                                  "server); unset: https://api.stripe.com")
    STRIPE_WEBHOOK_SECRET: str | None = Field(
        default=None, description="the signing secret (whsec_...) of the account's webhook endpoint, for whoever "
                                  "checks Stripe's events; Stripe's API shows it only when the endpoint is created")

    @field_validator("STRIPE_API_KEY")
    @classmethod
    def _key(cls, value: str) -> str:
        if not value.startswith(("sk_", "rk_")):
            raise ValueError("must be a secret key (sk_...) or a restricted key (rk_...), not a publishable one")
        return value

    @field_validator("STRIPE_API_BASE")
    @classmethod
    def _base(cls, value: str | None) -> str | None:
        if value and not value.startswith(("https://", "http://")):
            raise ValueError("must be an http:// or https:// URL")
        return value

    @field_validator("STRIPE_WEBHOOK_SECRET")
    @classmethod
    def _secret(cls, value: str | None) -> str | None:
        if value and not value.startswith("whsec_"):
            raise ValueError("must be a webhook signing secret (whsec_...)")
        return value


stripe = define_connector(
    "stripe",
    {
        "refund": {
            # Stripe keeps the first answer to a key: the engine may try a refund again with the
            # call's key, and the money moves once.
            "create": op(effect="money", input=RefundCreate, output=Refund, idempotent=True,
                         target=lambda i: f"payment_intent/{i.payment_intent}",
                         description="Refund part or all of a card payment",
                         amount="amount", currency="currency", ceiling=STRIPE_MAX_AMOUNT,
                         summary="Refund {amount:money} of payment {payment_intent}",
                         expect="payment {payment_intent} was refunded {amount}"),
            "get": op(effect="read", input=RefundRef, output=Refund, idempotent=True,
                      target=lambda i: f"refund/{i.id}", description="Read a refund", summary="Read refund {id}"),
            "list": op(effect="read", input=RefundQuery, output=RefundList, idempotent=True,
                       description="List refunds, newest first", summary="List refunds"),
        },
        "payment_intent": {
            "create": op(effect="money", input=PaymentIntentCreate, output=PaymentIntent, idempotent=True,
                         description="Create (and, with confirm, charge) a payment",
                         amount="amount", currency="currency", ceiling=STRIPE_MAX_AMOUNT,
                         summary="Charge {amount:money}"),
            "get": op(effect="read", input=PaymentIntentRef, output=PaymentIntent, idempotent=True,
                      target=lambda i: f"payment_intent/{i.id}", description="Read a payment",
                      summary="Read payment {id}"),
        },
    },
    info=VendorInfo(title="Stripe", logo=LOGO, homepage="https://stripe.com"),
    environment=StripeEnvironment,
    types=[product, webhook_endpoint],
)
