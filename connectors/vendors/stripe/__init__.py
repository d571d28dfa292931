"""Stripe: refunds and payment intents (money; Stripe honours `Idempotency-Key`), the reads a
workflow needs, and `stripe.product` and `stripe.webhook_endpoint` as resource types.

Its connector (`connector.py`), the models its operations take and answer (`models.py`), its
resource types (`resources.py`), its real driver over the official `stripe` library (`driver.py`),
its fake (`fake.py`) and its scenario steps (`steps.py`). A company lists it in its config:

    from connectors.vendors.stripe import stripe
    config = SanomaConfig(app_name="acme", connectors=[shop, stripe])
"""
from __future__ import annotations

from connectors import with_setup
from connectors.vendors.stripe.connector import LOGO, StripeEnvironment, stripe
from connectors.vendors.stripe.driver import make_driver
from connectors.vendors.stripe.fake import initial_state, make_fake
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
from connectors.vendors.stripe.resources import ProductFields, WebhookEndpointFields, product, webhook_endpoint
from connectors.vendors.stripe.steps import STEPS

# The halves attach to `stripe` itself: every module importing it sees them.
with_setup(stripe, driver=make_driver, fake=make_fake, steps=STEPS)

__all__ = [
    "LOGO",
    "STRIPE_MAX_AMOUNT",
    "PaymentIntent",
    "PaymentIntentCreate",
    "PaymentIntentRef",
    "ProductFields",
    "Refund",
    "RefundCreate",
    "RefundList",
    "RefundQuery",
    "RefundRef",
    "StripeEnvironment",
    "WebhookEndpointFields",
    "initial_state",
    "make_driver",
    "make_fake",
    "product",
    "stripe",
    "webhook_endpoint",
]
