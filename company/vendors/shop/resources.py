"""The shop's resource types, declared in the company's `resources/` files: `shop.product` (the
catalog: title, price, tags), `shop.staff_role` (a person's role in the shop admin) and
`shop.webhook` (where the shop posts its events, signed with a secret it never shows back)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from runs.authoring import (
    define_resource,
)


class ProductFields(BaseModel):
    sku: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str = Field(min_length=1)
    price_cents: int = Field(gt=0)
    currency: Literal["EUR", "USD"] = "EUR"
    tags: list[str] = Field(default_factory=list)
    created_at: str | None = None


def _product_values(vendor: Mapping[str, Any]) -> dict[str, Any]:
    """The shop's product (`name`, `price: {amount, currency}`) in the declared shape."""
    price = vendor.get("price") or {}
    return {"sku": vendor.get("sku"), "title": vendor.get("name"), "price_cents": price.get("amount"),
            "currency": price.get("currency"), "tags": list(vendor.get("tags") or []),
            "created_at": vendor.get("created_at")}


product = define_resource(
    type="product",
    title="Product",
    identity="sku",
    schema=ProductFields,
    fields={
        "currency": {"immutable": True},
        "tags": {"unordered": True},
        "created_at": {"vendor_owned": True},
    },
    find=lambda desired: desired["sku"],
    normalize=_product_values,
    effects={"create": "publish", "update": "publish", "delete": "publish"},
    description="A product in the shop's catalog; changing its price publishes it",
)


class StaffRoleFields(BaseModel):
    user: str = Field(min_length=1)
    role: Literal["support", "finance", "admin", "viewer"]


staff_role = define_resource(
    type="staff_role",
    title="Staff role",
    identity=("user", "role"),
    schema=StaffRoleFields,
    fields={"user": {"references": "sanoma.person", "by": "username"}},
    find=lambda desired: f"{desired['user']}:{desired['role']}",
    normalize=lambda vendor: {"user": vendor.get("username"), "role": vendor.get("role")},  # the shop says username
    effects={"create": "access", "update": "access", "delete": "access"},
    description="A person's role in the shop admin",
)

WebhookEvent = Literal["order.paid", "order.refunded", "product.updated"]


class WebhookFields(BaseModel):
    url: str = Field(pattern=r"^https://[^\s/]+(/\S*)?$")
    events: list[WebhookEvent] = Field(min_length=1)
    signing_secret: str = Field(min_length=16)


webhook = define_resource(
    type="webhook",
    title="Webhook",
    identity="url",
    schema=WebhookFields,
    fields={"events": {"unordered": True}, "signing_secret": {"write_only": True}},
    find=lambda desired: desired["url"],
    description="Where the shop posts its events, signed with a secret it never shows back",
)
