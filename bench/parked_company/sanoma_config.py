"""The config root `bench/parked.py` parks its runs with: held, napping and waiting runs, and the
ten-step run whose step it measures beside them; its vendor is the engine bench's (`bench.step.do`)."""
from bench_company.vendor import bench

from runs.authoring import SanomaConfig

config = SanomaConfig(app_name="parkedbench", connectors=[bench])
