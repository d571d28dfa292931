"""What Stripe's operations take and answer, in Stripe's own words (`amount` in minor units,
`payment_intent`, `status`), with the currency upper-cased as ISO 4217 writes it."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator

# The most a single Stripe charge or refund may be: eight digits of minor units (999,999.99 in a
# two-decimal currency). Stripe refuses more with `amount_too_large`; sanoma refuses it first.
STRIPE_MAX_AMOUNT = 99_999_999

PAYMENT_INTENT_ID = r"^pi_[A-Za-z0-9_]+$"
REFUND_ID = r"^re_[A-Za-z0-9_]+$"
CURRENCY = r"^[A-Z]{3}$"

RefundReason = Literal["duplicate", "fraudulent", "requested_by_customer"]


def _upper(value: str) -> str:
    return value.upper() if isinstance(value, str) else value


class RefundCreate(BaseModel):
    """Refund part or all of a payment intent's charge."""

    payment_intent: str = Field(pattern=PAYMENT_INTENT_ID, description="the payment intent to refund (pi_...)")
    amount: int = Field(gt=0, description="how much to refund, in minor units (cents)")
    currency: str = Field(pattern=CURRENCY, description="the payment's currency (ISO 4217, e.g. EUR); a refund "
                                                        "in another currency than the payment's is refused")
    reason: RefundReason | None = None

    _currency = field_validator("currency", mode="before")(_upper)


class Refund(BaseModel):
    id: str
    amount: int
    currency: str
    payment_intent: str | None = None
    status: str
    reason: str | None = None

    _currency = field_validator("currency", mode="before")(_upper)


class RefundRef(BaseModel):
    id: str = Field(pattern=REFUND_ID)


class RefundQuery(BaseModel):
    """The refunds of one payment intent (every refund of the account without one), newest first."""

    payment_intent: str | None = Field(default=None, pattern=PAYMENT_INTENT_ID)


class RefundList(BaseModel):
    refunds: list[Refund]
    total: int = Field(description="the sum of the refunds' amounts, in minor units")


class PaymentIntentCreate(BaseModel):
    amount: int = Field(gt=0, description="how much to charge, in minor units (cents)")
    currency: str = Field(pattern=CURRENCY, description="ISO 4217, e.g. EUR")
    customer: str | None = Field(default=None, pattern=r"^cus_[A-Za-z0-9_]+$")
    payment_method: str | None = Field(default=None, min_length=1)
    confirm: bool = False
    description: str = ""

    _currency = field_validator("currency", mode="before")(_upper)


class PaymentIntent(BaseModel):
    id: str
    amount: int
    amount_received: int = 0
    currency: str
    status: str
    customer: str | None = None
    latest_charge: str | None = None

    _currency = field_validator("currency", mode="before")(_upper)


class PaymentIntentRef(BaseModel):
    id: str = Field(pattern=PAYMENT_INTENT_ID)
