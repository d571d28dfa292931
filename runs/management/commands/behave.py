"""`manage.py behave`: behave-django's command, with a feature file of the config root given by path.

behave takes a path as a features folder and looks for `steps/` beside it; the config's scenarios
have none (their steps are the library's, run from the project's `features/`). A path to a feature
file under the config root is turned into an `--include` of that file, so
`manage.py behave --simple scenarios/refund.feature` runs it; a path that is not there, or a
`FILE:LINE`, is refused with what to write instead, before the test database is made.

The test database is cloned from a migrated template when one matches the migrations (a hash of
every migration file's text, Django's version and the database's engine): on SQLite a copy of a
file under `var/test-templates/` beside manage.py, on PostgreSQL `CREATE DATABASE ... TEMPLATE` of
a database named `sanoma_tpl_<hash>`. The first run with a given set of migrations migrates as
before and leaves the template; a migration added or edited changes the hash, so a stale template
is never used. A template that cannot be made or read (a read-only folder, no right to create
databases) leaves the test database made the usual way.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

from behave_django.management.commands.behave import Command as BehaveCommand
from django.conf import settings
from django.core.management.base import CommandError
from django.db import connections

from runs.config.checks import COMMAND_CHECKS
from runs.config.discovery import kind_dirs
from runs.config.paths import root_path

_LINE = re.compile(r"^(.*\.feature):(\d+)$")


class Command(BehaveCommand):
    requires_system_checks = COMMAND_CHECKS
    help = "Runs the scenarios with behave (behave-django); a feature file of the config root may be given by path"

    def handle(self, *args: Any, **options: Any) -> None:
        # Scenarios run against fakes on a test database: their runs and calls are not the company's
        # work, so they never reach /metrics (whose counters every process on the host adds to).
        settings.SANOMA_METRICS = False
        self._includes = self._config_paths(options.get("paths") or [], options)
        for connection in connections.all():
            _no_statement_timeout(connection)
            _clone_from_template(connection)
        super().handle(*args, **options)

    def _config_paths(self, paths: list[str], options: dict[str, Any]) -> dict[str, str]:
        """The given paths that are config feature files, each with the `--include` it becomes."""
        own = (Path(settings.BASE_DIR) / "features").resolve()
        root = Path(settings.SANOMA_ROOT).resolve()
        files = sorted(p for folder in kind_dirs(root, "scenarios") for p in folder.rglob("*.feature") if p.is_file())
        listed = ", ".join(root_path(p, root) for p in files) or "none"
        chosen: dict[str, str] = {}
        for given in paths:
            resolved = Path(given).resolve()
            if resolved == own or own in resolved.parents:
                continue  # the runtime's own features: behave reads them as it always does
            line = _LINE.match(given)
            if line is not None:
                raise CommandError(
                    f"{given}: a FILE:LINE of the config's scenarios cannot be chosen by line; choose the file with "
                    f"-i {root_path(line.group(1), root)} and the scenario with -n \"<its name>\"")
            if not resolved.is_file():
                where = root / given
                hint = f" (from the config root it is {where}: give that path)" if where.is_file() else ""
                raise CommandError(f"{given}: there is no such file{hint}; the feature files of {root} are {listed}")
            if resolved.suffix != ".feature" or resolved not in files:
                raise CommandError(f"{given}: not a feature file under the config root's scenarios/ (or "
                                   f"apps/<app>/scenarios/); the feature files of {root} are {listed}")
            chosen[given] = "^" + re.escape(root_path(resolved, root)) + "$"
        if chosen and options.get("include_re"):
            raise CommandError("give the feature files either as paths or with --include (-i), not both")
        return chosen

    def get_behave_args(self, argv: list[str] = sys.argv) -> list[str]:
        args = super().get_behave_args(argv)
        includes = getattr(self, "_includes", {})
        if not includes:
            return args
        kept = [arg for arg in args if arg not in includes]
        return [*kept, "--include", "|".join(includes.values())]


def _migrations_key(vendor: str, user: str) -> str:
    """A hash of what a migrated test database holds: every migration file's text, Django's version,
    the engine and who owns it."""
    import django
    from django.db.migrations.loader import MigrationLoader

    digest = hashlib.sha256(f"{django.__version__}|{vendor}|{user}".encode())
    loader = MigrationLoader(None, ignore_no_migrations=True, load=False)
    loader.load_disk()
    for key in sorted(loader.disk_migrations):
        module = sys.modules[type(loader.disk_migrations[key]).__module__]
        digest.update(repr(key).encode())
        digest.update(Path(str(module.__file__)).read_bytes())
    return digest.hexdigest()[:24]


def _no_statement_timeout(connection: Any) -> None:
    """The scenarios' test database is made, cloned and dropped by this process, and thrown away:
    no statement of it is cut at the site's timeout. On a loaded machine `DROP DATABASE` (which waits
    for the database's other sessions to end) took longer than the 30 s a site's statement may."""
    options = connection.settings_dict.get("OPTIONS", {})
    if connection.vendor == "postgresql" and "statement_timeout" in str(options.get("options", "")):
        options["options"] = re.sub(r"statement_timeout=\d+", "statement_timeout=0", options["options"])


def _clone_from_template(connection: Any) -> None:
    """Make this connection's `create_test_db` clone a migrated template instead of migrating, and
    leave one behind when there was none (module docstring)."""
    if connection.vendor not in ("sqlite", "postgresql") or connection.settings_dict["TEST"].get("MIGRATE") is False:
        return
    creation = connection.creation
    migrate_and_make = creation.create_test_db

    def create_test_db(verbosity: int = 1, autoclobber: bool = False, serialize: bool = True,
                       keepdb: bool = False) -> str:
        name = creation._get_test_db_name()
        if keepdb or (connection.vendor == "sqlite" and creation.is_in_memory_db(name)):
            return migrate_and_make(verbosity, autoclobber, serialize, keepdb)
        key = _migrations_key(connection.vendor, str(connection.settings_dict.get("USER") or ""))
        if not _from_template(connection, name, key):
            made = migrate_and_make(verbosity, autoclobber, serialize, keepdb)
            connection.close()
            _keep_template(connection, made, key)
            return made
        if verbosity >= 1:
            creation.log(f"Cloning the migrated template for alias {connection.alias!r}...")
        connection.close()
        settings.DATABASES[connection.alias]["NAME"] = name
        connection.settings_dict["NAME"] = name
        if serialize:
            connection._test_serialized_contents = creation.serialize_db_to_string()
        from django.core.management import call_command

        call_command("createcachetable", database=connection.alias)
        connection.ensure_connection()
        return name

    creation.create_test_db = create_test_db


def _template_file(key: str) -> Path:
    return Path(settings.BASE_DIR) / "var" / "test-templates" / f"{key}.sqlite3"


def _from_template(connection: Any, name: str, key: str) -> bool:
    """The test database `name` made from the template `key`; False when there is none (or it failed)."""
    if connection.vendor == "sqlite":
        template = _template_file(key)
        if not template.is_file():
            return False
        try:
            for leftover in (name, f"{name}-wal", f"{name}-shm", f"{name}-journal"):
                if os.path.exists(leftover):
                    os.remove(leftover)
            shutil.copyfile(template, name)
        except OSError:
            return False
        return True
    template_name = f"sanoma_tpl_{key}"
    with connection.creation._nodb_cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [template_name])
        if cursor.fetchone() is None:
            return False
        quoted = connection.ops.quote_name
        try:
            cursor.execute(f"DROP DATABASE IF EXISTS {quoted(name)}")
            cursor.execute(f"CREATE DATABASE {quoted(name)} TEMPLATE {quoted(template_name)}")
        except Exception:  # another session on the template, or no right to: make it the usual way
            return False
    return True


def _keep_template(connection: Any, made: str, key: str) -> None:
    """The migrated test database `made`, kept as the template `key` (whoever comes first wins)."""
    if connection.vendor == "sqlite":
        template = _template_file(key)
        part = template.with_name(f"{key}.{os.getpid()}.part")
        try:
            template.parent.mkdir(parents=True, exist_ok=True)
            source, target = sqlite3.connect(made), sqlite3.connect(part)
            try:
                source.backup(target)
            finally:
                source.close()
                target.close()
            os.replace(part, template)  # whole or not at all, for a run cloning it meanwhile
        except (OSError, sqlite3.Error):
            part.unlink(missing_ok=True)
        return
    template_name = f"sanoma_tpl_{key}"
    quoted = connection.ops.quote_name
    try:
        with connection.creation._nodb_cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {quoted(template_name)} TEMPLATE {quoted(made)}")
    except Exception:  # made by another run meanwhile, or no right to: the next run migrates again
        return
