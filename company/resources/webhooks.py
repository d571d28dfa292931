"""Where the shop tells us what happened. The signing secret stays out of the repo."""
from changes.datafiles.sanoma import secret
from company.vendors.shop import shop

orders_hook = shop.webhook(
    url="https://hooks.acme.example/shop/orders",
    events=["order.paid", "order.refunded"],
    signing_secret=secret("SHOP_WEBHOOK_SECRET"),
)
