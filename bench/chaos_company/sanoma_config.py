from runs.authoring import SanomaConfig

from .vendor import chaos

config = SanomaConfig(app_name="chaos", connectors=[chaos])
