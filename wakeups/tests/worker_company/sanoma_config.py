from runs.authoring import SanomaConfig
from worker_company.tally import tally

config = SanomaConfig(app_name="worker-company", connectors=[tally])
