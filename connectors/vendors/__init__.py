"""First-party connectors, one package per vendor (connector, models, driver, fake, tests)."""
