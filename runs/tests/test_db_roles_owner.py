"""`manage.py db_roles` run as the production setup runs it: by an owner role that is no superuser.

The owner is made as the deployment guide makes it (`CREATE ROLE ... LOGIN CREATEROLE` and a
database it owns); `migrate` and `db_roles` run as real `manage.py` processes connected as that
owner. Then the runtime role is tried on its own connection: what it must do works, the rest is
refused. The roles and the database are dropped afterwards.
"""
from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import connection  # noqa: F401  (the skipif condition reads it)

from runs.tests import db_roles_setup
from runs.tests.processes import REPO

pytestmark = [
    pytest.mark.process,
    pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's roles"),
    pytest.mark.django_db,
]

PASSWORD = "owner-" + secrets.token_hex(8)


@dataclass
class OwnedSite:
    owner: str
    database: str
    url: str

    def manage(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("PYTEST_", "DJANGO_SETTINGS", "DATABASE_"))}
        base.update(DATABASE_URL=self.url, DJANGO_SETTINGS_MODULE="sanoma_site.settings", **env)
        return subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=base, capture_output=True,
                              text=True, timeout=120)

    def connect(self, role: str, password: str) -> Any:
        import psycopg

        s = db_roles_setup._owner
        return psycopg.connect(dbname=self.database, user=role, password=password, host=s["HOST"] or None,
                               port=s["PORT"] or None, autocommit=True)


def _admin() -> Any:
    """The test database's creator (DATABASE_URL's user): it makes and drops the roles."""
    return db_roles_setup.owner_connect(autocommit=True)


@pytest.fixture(scope="module")
def owned_site(django_db_setup: Any, django_db_blocker: Any) -> Iterator[OwnedSite]:
    if not db_roles_setup.runtime_role_active():
        pytest.skip("PostgreSQL only")
    tag = secrets.token_hex(4)
    owner, database = f"sanoma_t_owner_{tag}", f"sanoma_t_owned_{tag}"
    s = db_roles_setup._owner
    host = s["HOST"] or "localhost"
    port = f":{s['PORT']}" if s["PORT"] else ""
    site = OwnedSite(owner=owner, database=database, url=f"postgresql://{owner}:{PASSWORD}@{host}{port}/{database}")
    with _admin() as admin:
        # As docs/guides/deploying/database.md has a superuser make them.
        admin.execute(f"CREATE ROLE {owner} LOGIN CREATEROLE PASSWORD '{PASSWORD}'")
        admin.execute(f"CREATE DATABASE {database} OWNER {owner}")
    try:
        migrated = site.manage("migrate", "-v0")
        assert migrated.returncode == 0, migrated.stderr[-3000:]
        yield site
    finally:
        with _admin() as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
            runtimes = [row[0] for row in admin.execute(
                "SELECT rolname FROM pg_roles WHERE rolname LIKE %s", [f"sanoma_t_rt{tag}%"])]
            for role in [*runtimes, owner]:
                admin.execute(f"DROP ROLE IF EXISTS {role}")


def test_db_roles_runs_as_a_createrole_owner_and_the_runtime_gets_only_what_it_needs(owned_site: OwnedSite):
    site = owned_site
    runtime, password = f"sanoma_t_rt{site.owner[-8:]}_a", "runtime-" + secrets.token_hex(8)
    with site.connect(site.owner, PASSWORD) as owner:
        assert owner.execute("SELECT rolsuper, rolcreaterole FROM pg_roles WHERE rolname = current_user"
                             ).fetchone() == (False, True)

    first = site.manage("db_roles", "--runtime", runtime, "--password-env", "RT_PASSWORD", RT_PASSWORD=password)
    assert first.returncode == 0, first.stderr[-3000:]
    assert f"role {runtime}: granted on {site.database}; on runs_ledgerrecord it may SELECT, INSERT only" \
        in first.stdout
    again = site.manage("db_roles", "--runtime", runtime)  # every later deploy
    assert again.returncode == 0, again.stderr[-3000:]

    with site.connect(runtime, password) as rt:
        assert rt.execute(
            "SELECT current_user, rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls, rolcanlogin "
            "FROM pg_roles WHERE rolname = current_user").fetchone() == (runtime, False, False, False, False, False,
                                                                          True)
        # What the site and the workers must do: read and write the app's tables, read and append the ledger.
        rt.execute("INSERT INTO django_session (session_key, session_data, expire_date) VALUES ('k', 'd', now())")
        rt.execute("UPDATE django_session SET session_data = 'e' WHERE session_key = 'k'")
        rt.execute("DELETE FROM django_session WHERE session_key = 'k'")
        rt.execute("SELECT count(*) FROM runs_run").fetchone()
        rt.execute("SELECT count(*) FROM runs_ledgerrecord").fetchone()
        rt.execute("SELECT count(*) FROM django_migrations").fetchone()
        assert rt.execute("SELECT has_table_privilege('runs_ledgerrecord', 'INSERT')").fetchone() == (True,)
        # Nothing more.
        import psycopg

        refused = [
            ("UPDATE runs_ledgerrecord SET actor = 'mallory'", "permission denied"),
            ("DELETE FROM runs_ledgerrecord", "permission denied"),
            ("TRUNCATE runs_ledgerrecord", "permission denied"),
            ("ALTER TABLE runs_ledgerrecord DISABLE TRIGGER ALL", "must be owner"),
            ("INSERT INTO django_migrations (app, name, applied) VALUES ('x', 'y', now())", "permission denied"),
            ("DELETE FROM django_migrations", "permission denied"),
            ("CREATE TABLE sneaky (i int)", "permission denied"),
            ("DROP TABLE runs_run", "must be owner"),
            ("CREATE ROLE sneaky_role", "permission denied"),
            ("SET session_replication_role = replica", "permission denied"),
        ]
        for sql, says in refused:
            with pytest.raises(psycopg.Error, match=says):
                rt.execute(sql)


@pytest.mark.parametrize("power", ["SUPERUSER", "BYPASSRLS", "REPLICATION"])
def test_db_roles_refuses_a_runtime_role_that_grants_cannot_hold(owned_site: OwnedSite, power: str):
    site = owned_site
    runtime = f"sanoma_t_rt{site.owner[-8:]}_{power.lower()}"
    with _admin() as admin:
        if not admin.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0]:
            pytest.skip("making such a role takes a superuser")
        admin.execute(f"CREATE ROLE {runtime} LOGIN {power}")

    refused = site.manage("db_roles", "--runtime", runtime)
    assert refused.returncode != 0
    assert f"role {runtime} is " in refused.stderr and "it would not be held to its grants" in refused.stderr, \
        refused.stderr[-3000:]
    assert "nothing was granted" in refused.stderr
    with site.connect(site.owner, PASSWORD) as owner:
        granted = owner.execute(
            "SELECT count(*) FROM information_schema.role_table_grants WHERE grantee = %s", [runtime]).fetchone()
        assert granted == (0,)
