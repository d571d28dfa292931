"""The shop's connector: its operations, each said in a sentence for whoever is asked to approve it,
its resource types, and the environment its real driver reads."""
from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from company.vendors.shop.models import (
    Deleted,
    Deletion,
    FoundShipment,
    Grant,
    Granted,
    Notice,
    Order,
    OrderRef,
    PriceChange,
    Product,
    Refund,
    RefundList,
    RefundQuery,
    RefundRequest,
    Sent,
    Shipment,
    ShipmentRequest,
)
from company.vendors.shop.resources import product, staff_role, webhook
from runs.authoring import (
    VendorInfo,
    define_connector,
    op,
)

LOGO = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
        '<rect width="16" height="16" rx="3" fill="#2b6"/></svg>')

class ShopEnvironment(BaseModel):
    """What the shop's real driver reads (a worker on the shop's fake needs none of it)."""

    SHOP_API_URL: str = Field(description="the shop's API base URL")
    SHOP_API_KEY: str = Field(min_length=16, description="an API key with order and staff scopes")
    SHOP_WEBHOOK_SECRET: str | None = Field(
        default=None, min_length=16,
        description='what the shop signs its webhooks with (data files: secret("SHOP_WEBHOOK_SECRET"))')

    @field_validator("SHOP_API_URL")
    @classmethod
    def _https(cls, value: str) -> str:
        if not value.startswith("https://"):
            raise ValueError("must be an https:// URL")
        return value


# The most one refund may move: the shop sells in euros, and no order of the shop comes near this.
REFUND_CEILING_CENTS = 1_000_000  # 10,000.00 EUR

# Each operation says in a sentence what one call does, for whoever is asked to approve it.
shop = define_connector(
    "shop",
    {
        "order": {
            "get": op(effect="read", input=OrderRef, output=Order, idempotent=True,
                      target=lambda i: f"order/{i.order_id}", description="Read an order",
                      summary="Read order {order_id}", given="order {order_id} exists"),
            "refund": op(effect="money", input=RefundRequest, output=Refund,
                         target=lambda i: f"order/{i.order_id}", description="Refund part or all of an order",
                         amount="amount_cents", currency="EUR", ceiling=REFUND_CEILING_CENTS,
                         summary="Refund {amount_cents:money} on order {order_id}",
                         expect="order {order_id} was refunded {amount_cents}"),
        },
        "refund": {
            "list": op(effect="read", input=RefundQuery, output=RefundList, idempotent=True,
                       description="List the latest refunds", summary="List the latest {limit} refunds"),
        },
        # The carrier books a pickup for every call it gets (it ignores idempotency keys): a booking
        # whose reply was lost is never sent again blindly; the run asks the carrier's lookup
        # (`find`) whether it was made, and waits for an operator when the lookup cannot say.
        "shipment": {
            "book": op(effect="write", input=ShipmentRequest, output=Shipment, idempotency_key="ignored",
                       reconcile="find", target=lambda i: f"order/{i.order_id}",
                       description="Book the carrier's pickup of an order",
                       summary="Book {carrier} to pick up order {order_id}",
                       expect="order {order_id} was booked with {carrier}"),
            "find": op(effect="read", input=ShipmentRequest, output=FoundShipment, idempotent=True,
                       target=lambda i: f"order/{i.order_id}", description="Look up the carrier's booking of an order",
                       summary="Look up {carrier}'s booking of order {order_id}"),
        },
        "customer": {
            "notify": op(effect="send", input=Notice, output=Sent, description="Email a customer",
                         summary="Email {customer}: {subject}", expect="{customer} was told {subject}"),
            "delete": op(effect="write", input=Deletion, output=Deleted, description="Erase a customer's data",
                         summary="Erase the data of customer {customer}"),
        },
        "product": {
            "price": op(effect="publish", input=PriceChange, output=Product, idempotent=True,
                        target=lambda i: f"product/{i.sku}", description="Publish a new price",
                        summary="Publish {price_cents:money} as the price of {sku}"),
        },
        "staff": {
            "grant": op(effect="access", input=Grant, output=Granted,
                        description="Give a person a role in the shop admin",
                        summary="Give {username} the role {role} in the shop admin"),
        },
    },
    info=VendorInfo(title="Shop", logo=LOGO, homepage="https://shop.example.com"),
    environment=ShopEnvironment,
    types=[product, staff_role, webhook],
)
