"""Migrating the test database back and forth in a test, as the tables' owner.

On PostgreSQL the suite runs as the runtime's role, which may not migrate (see
runs/tests/db_roles_setup.py): migrating, and writing the rows of an old state, is done on a
connection as the owner, as `migrate --database owner` does in production. On SQLite there is one
role and nothing changes.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader

from runs.tests import db_roles_setup


@contextmanager
def as_owner() -> Iterator[None]:
    """The default connection as the tables' owner inside the block (PostgreSQL under the runtime role)."""
    if not db_roles_setup.runtime_role_active():
        yield
        return
    settings_dict = connection.settings_dict
    runtime = settings_dict["USER"], settings_dict["PASSWORD"]
    owner = db_roles_setup._owner
    connection.close()
    settings_dict["USER"], settings_dict["PASSWORD"] = owner["USER"], owner["PASSWORD"]
    try:
        yield
    finally:
        connection.close()
        settings_dict["USER"], settings_dict["PASSWORD"] = runtime


def migrate(targets: Sequence[tuple[str, str | None]]) -> Any:
    """Migrate to `targets`; answers the apps of what is applied then (the models as the database has them)."""
    MigrationExecutor(connection).migrate(list(targets))
    loader = MigrationLoader(connection)
    return loader.project_state(list(loader.applied_migrations or {})).apps


def leaves() -> list[tuple[str, str]]:
    return MigrationLoader(connection).graph.leaf_nodes()


__all__ = ["as_owner", "leaves", "migrate"]
