"""The support app's people in the shop: the support lead and alice answer customers."""
from company.resources.staff import alice, support_lead
from company.vendors.shop import shop

support_lead_support = shop.staff_role(user=support_lead, role="support")
alice_support = shop.staff_role(user=alice, role="support")
