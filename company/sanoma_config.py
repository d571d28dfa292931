from company.vendors.shop import shop
from runs.authoring import SanomaConfig

config = SanomaConfig(app_name="acme", connectors=[shop])
