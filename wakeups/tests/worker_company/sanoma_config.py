from runs.authoring import SanomaConfig

from .tally import tally

config = SanomaConfig(app_name="worker-company", connectors=[tally])
