"""What the shop sells, at what price. Changing a price here is a `publish` when applied."""
from company.vendors.shop import shop

mug = shop.product(sku="mug", title="Mug", price_cents=1500, tags=["kitchen"])
tee = shop.product(sku="tee", title="T-shirt", price_cents=2500, tags=["apparel"])
cap = shop.product(sku="cap", title="Cap", price_cents=1800, tags=["apparel"])
tote = shop.product(sku="tote", title="Tote bag", price_cents=1200, currency="EUR", tags=["apparel", "bags"])
