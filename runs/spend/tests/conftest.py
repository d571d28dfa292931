"""The engine fixtures of runs/tests: `engine_for` (a config on fakes) and `alice`."""
from runs.tests.conftest import alice, engine_for  # noqa: F401
