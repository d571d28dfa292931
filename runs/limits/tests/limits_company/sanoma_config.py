from runs.authoring import SanomaConfig

from .meter import keyedmeter, meter

config = SanomaConfig(app_name="limits-company", connectors=[meter, keyedmeter])
