"""A config root for the credentials tests (`changes/tests/test_credentials*.py`).

Two connectors declare environments: `vault` (a URL with a check, a token, a region with a default,
and a variable whose check throws on one value) and `mailer` (one key). Both have real drivers that
reach no network: they answer with the names of `CallContext.secrets` and a digest of the values
(never a value), so a run's steps show what the driver was given. `harness.py` beside it is the
tests' own helper, not part of the config.
"""
