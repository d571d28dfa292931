from runs.tests.conftest import alice, engine_for  # noqa: F401  (the engine's fixtures, shared)
