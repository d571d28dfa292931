"""The config root `bench/parked.py` parks its runs with: held, napping and waiting runs, and the
ten-step run whose step it measures beside them."""
from parked_company.vendor import parkedbench
from runs.authoring import SanomaConfig

config = SanomaConfig(app_name="parkedbench", connectors=[parkedbench])
