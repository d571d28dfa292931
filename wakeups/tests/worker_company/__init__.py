"""A config root made for the worker tests (`wakeups/tests/test_crash.py`, `wakeups/tests/test_worker.py`).

Loaded as a package named `worker_company` (its parent folder on sys.path), exactly as a
company's root is; `harness.py` beside it is the tests' own helper, not part of the config.
"""
