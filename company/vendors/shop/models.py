"""What the shop's operations take and answer."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class OrderRef(BaseModel):
    order_id: str = Field(min_length=1)


class Order(BaseModel):
    order_id: str
    customer: str
    total_cents: int
    refunded_cents: int = 0
    status: str


class RefundRequest(BaseModel):
    order_id: str = Field(min_length=1)
    amount_cents: int = Field(gt=0)
    reason: str = ""


class Refund(BaseModel):
    refund_id: str
    order_id: str
    amount_cents: int


class Notice(BaseModel):
    customer: str = Field(min_length=1)
    subject: str = Field(min_length=1)
    body: str = ""


class Sent(BaseModel):
    message_id: str


class PriceChange(BaseModel):
    sku: str = Field(min_length=1)
    price_cents: int = Field(gt=0)


class Product(BaseModel):
    sku: str
    price_cents: int


class Grant(BaseModel):
    username: str = Field(min_length=1)
    role: str = Field(min_length=1)


class Granted(BaseModel):
    username: str
    role: str


class RefundQuery(BaseModel):
    limit: int = Field(default=100, ge=1, le=1000)


class RefundList(BaseModel):
    refunds: list[dict[str, Any]]
    total_cents: int


class ShipmentRequest(BaseModel):
    order_id: str = Field(min_length=1)
    carrier: Literal["posti", "dhl"] = "posti"


class Shipment(BaseModel):
    shipment_id: str
    order_id: str
    carrier: str
    tracking: str


class FoundShipment(BaseModel):
    """What the carrier's lookup says about a booking: whether it was made, and the booking."""

    happened: bool
    output: Shipment | None = None


class Deletion(BaseModel):
    customer: str = Field(min_length=1)


class Deleted(BaseModel):
    customer: str
    deleted: bool
