from runs.authoring import SanomaConfig

from .vendors import mailer, vault

config = SanomaConfig(app_name="credentials-company", connectors=[vault, mailer])
