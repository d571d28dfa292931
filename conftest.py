"""Shared fixtures: the example company resolved on in-memory fakes, users, and a drain loop."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _clean_process_state():
    from runs.engine import clock, faults

    yield
    faults.clear()
    clock.reset()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The suite runs as the runtime's role on PostgreSQL: see runs/tests/db_roles_setup.py."""
    from runs.tests.db_roles_setup import as_runtime_role

    with as_runtime_role(django_db_blocker):
        yield
    # A credentials watcher (a thread LISTENing on a connection of its own) would keep the test
    # database from being dropped when the session ends: end it first.
    from changes.credentials.runtime import stop_watching

    stop_watching()
