"""Who holds which role in the shop admin. Granting one is `access`: the security group approves it."""
from company.resources.staff import finance_lead, sam
from company.vendors.shop import shop

finance_lead_finance = shop.staff_role(user=finance_lead, role="finance")
sam_admin = shop.staff_role(user=sam, role="admin")
