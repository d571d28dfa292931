"""Shared fixtures: the example company resolved on in-memory fakes, users, and a drain loop."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

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
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix):
    """A lane of `./test` (scripts/suite_lanes.py) has a test database of its own: SANOMA_TEST_DB_SUFFIX
    (set by ./test) goes on the end of its name, as pytest-django does for xdist's workers."""
    import os

    from pytest_django.fixtures import _set_suffix_to_test_databases

    suffix = os.environ.get("SANOMA_TEST_DB_SUFFIX", "")
    if suffix:
        _set_suffix_to_test_databases(suffix=suffix)
    _patient_test_transactions()


# The site's and workers' sessions end a transaction left idle for a minute. A test's own transaction
# wraps the whole test, including its waits on the processes it starts (a change's checks, a
# worker): on a loaded 2-core machine those took over a minute and PostgreSQL ended the test's
# session under it. The test process's own connection waits ten; the processes it starts keep the
# site's setting (runs/tests/test_health_db_timeouts.py checks it there).
TEST_PROCESS_IDLE_IN_TRANSACTION_MS = 600_000


def _patient_test_transactions() -> None:
    import re

    from django.db import connections

    options = connections["default"].settings_dict.get("OPTIONS", {})
    if "idle_in_transaction_session_timeout" in str(options.get("options", "")):
        options["options"] = re.sub(r"idle_in_transaction_session_timeout=\d+",
                                    f"idle_in_transaction_session_timeout={TEST_PROCESS_IDLE_IN_TRANSACTION_MS}",
                                    options["options"])


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The suite runs as the runtime's role on PostgreSQL: see runs/tests/db_roles_setup.py. Two
    pytest processes (./test's lanes) grant the one runtime role one after the other: creating a role
    in two sessions at once can fail on its name."""
    from runs.tests.db_roles_setup import as_runtime_role

    with ExitStack() as roles:
        with _file_lock("db-roles"):
            roles.enter_context(as_runtime_role(django_db_blocker))
        yield
    # A credentials watcher (a thread LISTENing on a connection of its own) would keep the test
    # database from being dropped when the session ends: end it first.
    from changes.credentials.runtime import stop_watching

    stop_watching()


@contextmanager
def _file_lock(name: str) -> Iterator[None]:
    """One process at a time in the block, across pytest processes (a lock file under the system's
    temp folder, released when the block ends or the process dies)."""
    import fcntl
    import tempfile
    from pathlib import Path

    with open(Path(tempfile.gettempdir()) / f"sanoma-tests-{name}.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


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


def pytest_collection_modifyitems(config, items):
    """In a lane of `./test` (SANOMA_LANE, scripts/suite_lanes.py), only that lane's tests run.

    Each Chromium journey runs once per `./test`, on one of its two suites: the page a journey
    drives is the same on either database, and the server side of every page runs on both in the
    request tests. Which suite is fixed per test (a hash of its id), so the two suites share the
    journeys about evenly and each suite has journeys on it. So does a test that uses no database
    of the suite (scripts/suite_lanes.py, `suite_of`): the same on either, it runs on one. A run of
    pytest on its own (no SANOMA_SUITE set by ./test) runs them all."""
    import os
    import zlib

    lane = os.environ.get("SANOMA_LANE", "")
    if lane:
        from scripts.suite_lanes import split

        kept, other = split(items, lane)
        if other:
            config.hook.pytest_deselected(items=other)
            items[:] = kept
        # A test that holds processes to a rate in wall time runs last: by then the lanes beside it
        # (the other database's, the work lanes) have mostly ended, and a busy core skews it least.
        items.sort(key=lambda item: item.get_closest_marker("timing") is not None)
    suite = os.environ.get("SANOMA_SUITE", "")
    if suite not in ("sqlite", "postgresql"):
        return
    from scripts.suite_lanes import BOTH, suite_of_item

    sources: dict[str, str] = {}
    for item in items:
        if "shared_chromium" in getattr(item, "fixturenames", ()):
            home = ("sqlite", "postgresql")[zlib.crc32(item.nodeid.split("[")[0].encode()) % 2]
            if home != suite:
                item.add_marker(pytest.mark.skip(reason=f"a browser journey runs once per ./test: on the {home} suite"))
            continue
        home = suite_of_item(item, sources)
        if home not in (BOTH, suite):
            item.add_marker(pytest.mark.skip(reason=f"uses no database of the suite: runs once per ./test, on the "
                                                    f"{home} suite"))
