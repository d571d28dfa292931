"""Stripe's resource types, declared in a company's `resources/` files: `stripe.product` (a product
of the catalog, by the id the company gives it) and `stripe.webhook_endpoint` (where Stripe posts its
events, by URL). A webhook endpoint's signing secret is Stripe's to make and is shown by its API only
in the answer to the create: it is never a field, never recorded (see the driver)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from connectors import define_resource


class ProductFields(BaseModel):
    id: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_-]+$",
                    description="the product's id at Stripe, chosen by the company (e.g. prod_mug)")
    name: str = Field(min_length=1)
    description: str = ""
    active: bool = True
    metadata: dict[str, str] = Field(default_factory=dict)
    created: int | None = None  # set by Stripe (epoch seconds)


def _product_values(vendor: Mapping[str, Any]) -> dict[str, Any]:
    """Stripe's product (`description: null` when none) in the declared shape."""
    return {"id": vendor.get("id"), "name": vendor.get("name"), "description": vendor.get("description") or "",
            "active": bool(vendor.get("active", True)), "metadata": dict(vendor.get("metadata") or {}),
            "created": vendor.get("created")}


product = define_resource(
    type="product",
    title="Product",
    identity="id",
    schema=ProductFields,
    fields={"created": {"vendor_owned": True}},
    find=lambda desired: desired["id"],
    normalize=_product_values,
    description="A product of the Stripe catalog, by the id the company gives it",
)


class WebhookEndpointFields(BaseModel):
    url: str = Field(pattern=r"^https://[^\s/]+(/\S*)?$")
    enabled_events: list[str] = Field(min_length=1, description='the event types sent, e.g. "charge.refunded"; '
                                                                '"*" for every one')
    description: str = ""
    status: str | None = None  # enabled or disabled: Stripe's


def _endpoint_values(vendor: Mapping[str, Any]) -> dict[str, Any]:
    return {"url": vendor.get("url"), "enabled_events": list(vendor.get("enabled_events") or []),
            "description": vendor.get("description") or "", "status": vendor.get("status")}


webhook_endpoint = define_resource(
    type="webhook_endpoint",
    title="Webhook endpoint",
    identity="url",
    schema=WebhookEndpointFields,
    fields={"enabled_events": {"unordered": True}, "status": {"vendor_owned": True}},
    find=lambda desired: desired["url"],
    normalize=_endpoint_values,
    description="Where Stripe posts the account's events; its signing secret is never recorded",
)
