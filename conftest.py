"""Shared fixtures: the example company resolved on in-memory fakes, users, and a drain loop."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hasher():
    """The tests' passwords need no strength: Django's default hasher spends about a second per hash on a
    busy 2-core machine, and the browser tests set a password and sign in with it each time. Processes
    a test starts (`manage.py ...`) keep the site's hashers."""
    from django.test import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


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


@pytest.fixture(scope="session")
def shared_chromium():
    """The session's one headless Chromium (runs/tests/chromium.py): the `browser` fixture hands it to
    each browser test as a new one would be. Quit when the session ends."""
    from runs.tests.chromium import SharedChromium

    shared = SharedChromium()
    try:
        yield shared
    finally:
        shared.close()
