from bench_company.vendor import bench
from runs.authoring import SanomaConfig

config = SanomaConfig(app_name="bench", connectors=[bench])
