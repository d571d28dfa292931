"""Where the shop tells us what happened. The signing secret stays out of the repo."""
from company.vendors.shop import shop
from runs.authoring import secret

orders_hook = shop.webhook(
    url="https://hooks.acme.example/shop/orders",
    events=["order.paid", "order.refunded"],
    signing_secret=secret("SHOP_WEBHOOK_SECRET"),
)
