"""A company of one workflow on Stripe's real driver, for the worker-process tests."""
from connectors.vendors.stripe import stripe
from runs.authoring import SanomaConfig

config = SanomaConfig(app_name="stripe-company", connectors=[stripe])
