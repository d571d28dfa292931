"""`manage.py db_roles`: the runtime's PostgreSQL role and its grants (least privilege).

Run as the tables' owner (the role that ran `migrate`): with DATABASE_OWNER_URL set, on the
`owner` connection, else on DATABASE_URL's. Creates the runtime role when missing and grants it
what the app needs: SELECT, INSERT, UPDATE and DELETE on every table but two, SELECT and INSERT
only on the ledger (`runs_ledgerrecord`), SELECT only on `django_migrations`. It never owns a
table, so it cannot alter, disable triggers on, or truncate the ledger. Idempotent: run it again
after every `migrate` (default privileges cover new tables; the ledger's are set again).
`--sql` prints the statements instead of running them.

The owner needs no superuser: CREATEROLE is enough (PostgreSQL 15 and later let such a role set
LOGIN, CREATEDB and CREATEROLE on the roles it manages, not SUPERUSER, REPLICATION or BYPASSRLS).
A runtime role that already has one of those three is refused, with nothing granted.
"""
from __future__ import annotations

import os
import re
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

from runs.config.checks import COMMAND_CHECKS

LEDGER = "runs_ledgerrecord"
_ROLE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def grant_statements(*, runtime: str, owner: str, database: str, schema: str = "public") -> list[str]:
    """The statements, in order; `owner` is the role that owns the tables (and runs them)."""
    q = _quote
    r, s = q(runtime), q(schema)
    # A role CREATE ROLE makes is NOSUPERUSER NOREPLICATION NOBYPASSRLS already. Those three may be named
    # in ALTER ROLE only by a superuser (even to turn them off), and the owner is no superuser: an
    # existing role that has one of them is refused here, before anything is granted, instead.
    create = (
        "DO $$ BEGIN\n"
        f"    IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{runtime}' "
        "AND (rolsuper OR rolreplication OR rolbypassrls)) THEN\n"
        f"        RAISE EXCEPTION 'role {runtime} is a superuser, a replication role or bypasses row security: "
        "it would not be held to its grants';\n"
        "    END IF;\n"
        "    BEGIN\n"
        f"        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{runtime}') THEN\n"
        f"            CREATE ROLE {r} LOGIN;\n"
        "        END IF;\n"
        "    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;  -- created meanwhile by another session\n"
        "    END;\n"
        "END $$"
    )
    return [
        create,
        f"ALTER ROLE {r} LOGIN NOCREATEDB NOCREATEROLE",
        f"GRANT CONNECT ON DATABASE {q(database)} TO {r}",
        f"GRANT USAGE ON SCHEMA {s} TO {r}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {s} TO {r}",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {s} TO {r}",
        f"ALTER DEFAULT PRIVILEGES FOR ROLE {q(owner)} IN SCHEMA {s} "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {r}",
        f"ALTER DEFAULT PRIVILEGES FOR ROLE {q(owner)} IN SCHEMA {s} GRANT USAGE, SELECT ON SEQUENCES TO {r}",
        # The ledger: read and append, nothing else (no UPDATE, DELETE, TRUNCATE, TRIGGER, REFERENCES).
        f"REVOKE ALL ON {s}.{LEDGER} FROM {r}",
        f"REVOKE ALL ON {s}.{LEDGER} FROM PUBLIC",
        f"GRANT SELECT, INSERT ON {s}.{LEDGER} TO {r}",
        f"REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON {s}.django_migrations FROM {r}",
    ]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def owner_facts(connection: BaseDatabaseWrapper) -> tuple[str, str, str, str | None]:
    """current_user, current_database(), current_schema(), and the ledger table's owner (None: no table)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user, current_database(), current_schema(), "
                       "(SELECT tableowner FROM pg_tables WHERE schemaname = current_schema() AND tablename = %s)",
                       [LEDGER])
        user, database, schema, table_owner = cursor.fetchone()
    return user, database, schema, table_owner


def apply(connection: BaseDatabaseWrapper, *, runtime: str, password: str | None = None) -> list[str]:
    """Create the runtime role and grant it, on `connection` (the owner's); the statements run."""
    if connection.vendor != "postgresql":
        raise CommandError("db_roles is for PostgreSQL: SQLite has no roles (its triggers refuse UPDATE and DELETE "
                           "of ledger records)")
    if not _ROLE.match(runtime):
        raise CommandError(f"--runtime {runtime!r}: a role name is lower-case letters, digits and _ (at most 63)")
    user, database, schema, table_owner = owner_facts(connection)
    if table_owner is None:
        raise CommandError(f"no table {LEDGER} in {database}: run `manage.py migrate` (as the owner) first")
    if table_owner != user:
        raise CommandError(f"run db_roles as the tables' owner ({table_owner}), not {user}: set DATABASE_OWNER_URL "
                           f"(or DATABASE_URL) to the owner's")
    if runtime == user:
        raise CommandError(f"the runtime role cannot be the owner ({user})")
    refused = _powers(connection, runtime)
    if refused:
        raise CommandError(f"role {runtime} is {refused}: it would not be held to its grants. Use another "
                           f"--runtime, or have a superuser take that from it (ALTER ROLE {runtime} NOSUPERUSER "
                           "NOREPLICATION NOBYPASSRLS); nothing was granted")
    statements = grant_statements(runtime=runtime, owner=user, database=database, schema=schema)
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
        if password:
            cursor.execute(f"ALTER ROLE {_quote(runtime)} PASSWORD %s", [password])
        cursor.execute("SELECT rolsuper OR rolreplication OR rolbypassrls, pg_has_role(%s, %s, 'MEMBER') "
                       "FROM pg_roles WHERE rolname = %s", [runtime, user, runtime])
        powerful, member = cursor.fetchone()
    if powerful or member:
        raise CommandError(f"role {runtime} is a superuser, a replication role, bypasses row security or is a "
                           f"member of the owner {user}: it would not be held to its grants")
    return statements


def _powers(connection: BaseDatabaseWrapper, role: str) -> str:
    """What an existing `role` has that no grant can hold back ("" for none, or no such role)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper, rolreplication, rolbypassrls FROM pg_roles WHERE rolname = %s", [role])
        row = cursor.fetchone()
    if row is None:
        return ""
    names = ("a superuser", "a replication role", "exempt from row security (BYPASSRLS)")
    return " and ".join(name for name, has in zip(names, row, strict=True) if has)


def ledger_privileges(connection: BaseDatabaseWrapper, role: str) -> dict[str, bool]:
    """What `role` may do to the ledger table."""
    names = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "TRIGGER", "REFERENCES")
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(f"has_table_privilege(%s, %s, '{n}')" for n in names),
                       [v for _ in names for v in (role, LEDGER)])
        return dict(zip(names, cursor.fetchone(), strict=True))


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = ("Create the runtime's PostgreSQL role and grant it least privilege (INSERT and SELECT only on the "
            "ledger). Run as the tables' owner after migrate; --sql prints the statements instead.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--runtime", default="sanoma_runtime",
                            help="the role the app connects as (default sanoma_runtime)")
        parser.add_argument("--password-env", metavar="VARIABLE",
                            help="set the role's password from this environment variable (never printed)")
        parser.add_argument("--database", default=None,
                            help="the connection to run on: `owner` when DATABASE_OWNER_URL is set, else `default`")
        parser.add_argument("--sql", action="store_true", help="print the statements, run nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        alias = options["database"] or ("owner" if "owner" in settings.DATABASES else "default")
        if alias not in settings.DATABASES:
            raise CommandError(f"--database {alias}: no such connection")
        connection = connections[alias]
        runtime = options["runtime"]
        password = None
        if options["password_env"]:
            password = os.environ.get(options["password_env"], "")
            if not password:
                raise CommandError(f"--password-env {options['password_env']}: the variable is not set")
        if options["sql"]:
            if connection.vendor == "postgresql":
                user, database, schema, _ = owner_facts(connection)
            else:
                user, database, schema = "<owner>", "<database>", "public"
            if not _ROLE.match(runtime):
                raise CommandError(f"--runtime {runtime!r}: a role name is lower-case letters, digits and _")
            for statement in grant_statements(runtime=runtime, owner=user, database=database, schema=schema):
                self.stdout.write(statement + ";")
            self.stdout.write(f"-- and a password for the role: ALTER ROLE {_quote(runtime)} PASSWORD '...';")
            return
        apply(connection, runtime=runtime, password=password)
        granted = ledger_privileges(connection, runtime)
        allowed = ", ".join(n for n, ok in granted.items() if ok)
        self.stdout.write(f"role {runtime}: granted on {connection.settings_dict['NAME']}; "
                          f"on {LEDGER} it may {allowed} only")
