"""First-party connectors of real vendors, one package each (`connectors/vendors/<vendor>/`): the
connector, its models, its fake, its driver over `connectors.http`, and tests against a local server
answering as the vendor's documented API does. A company lists one in its `sanoma_config.py`."""
