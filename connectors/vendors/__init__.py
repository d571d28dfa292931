"""First-party connectors: one package per vendor (its connector, models, resource types, driver and
fake), imported into a company's `sanoma_config.py` to use it."""
