"""The shop the example company sells through: orders, refunds, shipments, customers and staff access.

Its connector (`connector.py`), the models its operations take and answer (`models.py`), its
resource types (`resources.py`), its real driver (`driver.py`) and its fake (`fake.py`).

Its resource types, declared in the company's `resources/` files: `shop.product` (the catalog:
title, price, tags), `shop.staff_role` (a person's role in the shop admin) and `shop.webhook`
(where the shop posts its events, signed with a secret it never shows back).
"""
from __future__ import annotations

from company.vendors.shop.connector import LOGO, REFUND_CEILING_CENTS, ShopEnvironment, shop
from company.vendors.shop.driver import make_driver
from company.vendors.shop.fake import initial_state, make_fake
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
from company.vendors.shop.resources import (
    ProductFields,
    StaffRoleFields,
    WebhookEvent,
    WebhookFields,
    product,
    staff_role,
    webhook,
)
from runs.authoring import with_setup

# The halves attach to `shop` itself: every module importing it sees them.
with_setup(shop, driver=make_driver, fake=make_fake)

__all__ = [
    "Deleted",
    "Deletion",
    "FoundShipment",
    "Grant",
    "Granted",
    "LOGO",
    "Notice",
    "Order",
    "OrderRef",
    "PriceChange",
    "Product",
    "ProductFields",
    "REFUND_CEILING_CENTS",
    "Refund",
    "RefundList",
    "RefundQuery",
    "RefundRequest",
    "Sent",
    "Shipment",
    "ShipmentRequest",
    "ShopEnvironment",
    "StaffRoleFields",
    "WebhookEvent",
    "WebhookFields",
    "initial_state",
    "make_driver",
    "make_fake",
    "product",
    "shop",
    "staff_role",
    "webhook",
]
