"""The probes a container platform asks: is the process up (`/healthz`: nothing read), is it ready
(`/readyz`, `manage.py health`: the database answers, every migration is applied, the config
resolves), and is this host's worker or supervisor alive (`manage.py health --worker|--supervisor`:
it said so within its lease).

A check answers a `Check`: its name, whether it passed, and a line saying what failed. The
migrations are read until they are all applied, then not again in this process (its code, and so
its migrations, cannot change while it runs).

An SQLite database whose file does not exist is reported missing, never opened: opening it would
make an empty file, and a probe must not make the database it checks.
"""
from __future__ import annotations

import logging
import socket
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connections
from django.db.migrations.executor import MigrationExecutor

from connectors.errors import ConfigError
from runs import presence
from runs.config.registry import get_config
from runs.models import PresenceRole

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    problem: str = ""  # what failed, in a line (empty when ok)

    def as_dict(self) -> dict[str, object]:
        return {"ok": self.ok, **({"problem": self.problem} if self.problem else {})}


_migrated: set[str] = set()  # the databases seen with every migration applied


def missing_file(using: str = "default") -> str | None:
    """The SQLite file `using` names when it does not exist (None: it exists, or not SQLite, or in memory)."""
    entry = settings.DATABASES[using]
    name = str(entry.get("NAME") or "")
    if "sqlite" not in entry.get("ENGINE", "") or not name or name == ":memory:" or name.startswith("file:"):
        return None
    return None if Path(name).exists() else name


def database(using: str = "default", *, say_why: bool = False) -> Check:
    """The database answers; `say_why` names a missing SQLite file's path (the command's output),
    else only that it is missing (an unauthenticated HTTP answer says no path of the host)."""
    missing = missing_file(using)
    if missing is not None:
        which = f"the database file {missing}" if say_why else "the database file"
        return Check("database", False, f"{which} does not exist (check SANOMA_VAR_DIR or "
                                        "DATABASE_URL; `manage.py migrate` makes it)")
    try:
        with connections[using].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as err:
        log.warning("readiness: the database does not answer: %s", err)
        return Check("database", False, f"the database does not answer ({type(err).__name__})")
    return Check("database", True)


def migrations(using: str = "default") -> Check:
    if using in _migrated:
        return Check("migrations", True)
    try:
        loader = MigrationExecutor(connections[using]).loader
    except DatabaseError as err:
        log.warning("readiness: the migrations could not be read: %s", err)
        return Check("migrations", False, f"the applied migrations could not be read ({type(err).__name__})")
    # Every migration the code has, not only the plan to the latest ones: a plan to a recorded
    # latest migration is empty even when one before it was never applied.
    applied = loader.applied_migrations or {}
    missing = sorted(key for key in loader.graph.nodes if key not in applied)
    if missing:
        names = [f"{app_label}.{name}" for app_label, name in missing]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        return Check("migrations", False, f"{len(names)} migration(s) not applied: {shown} "
                                          "(run `manage.py migrate`)")
    _migrated.add(using)
    return Check("migrations", True)


def config(*, say_why: bool) -> Check:
    """The company's config resolves; `say_why` puts the config's own error in the line (the
    command's output), else only that it failed (an unauthenticated HTTP answer)."""
    try:
        get_config()
    except ConfigError as err:
        log.warning("readiness: the config does not resolve: %s", err)
        why = f": {err}" if say_why else " (see the site's log, or run `manage.py check`)"
        return Check("config", False, f"the config does not resolve{why}")
    return Check("config", True)


def readiness(*, say_why: bool = False) -> list[Check]:
    """The database, then (when it answers) the migrations, and the config. `say_why` (the command,
    run by the operator) says the paths and the config's own error; without it (`/readyz`, open to
    anyone) the lines name no file of the host."""
    checks = [database(say_why=say_why)]
    if checks[0].ok:
        checks.append(migrations())
    checks.append(config(say_why=say_why))
    return checks


def process(role: str, *, host: str | None = None) -> Check:
    """This host's worker (or supervisor) beat within its limit: a worker within its lease
    (`SANOMA_LEASE_SECONDS`: past it, its runs are taken over), a supervisor within the time it is
    counted gone (`presence.SUPERVISOR_GONE_AFTER`). With several on the host, the freshest counts."""
    host = host or socket.gethostname()
    if missing_file() is not None:
        return Check(role, False, "the database does not exist, so no worker or supervisor can have said it is up")
    limit = (timedelta(seconds=settings.SANOMA_LEASE_SECONDS) if role == PresenceRole.WORKER
             else presence.SUPERVISOR_GONE_AFTER)
    try:
        rows = [seen for seen in presence.seen() if seen.role == role and seen.name.rpartition(":")[0] == host]
    except DatabaseError as err:
        return Check(role, False, f"the database does not answer ({type(err).__name__})")
    if not rows:
        return Check(role, False, f"no {role} on {host} has said it is up")
    freshest = min(rows, key=lambda seen: seen.age)
    age = freshest.age.total_seconds()
    if freshest.age > limit:
        return Check(role, False, f"{role} {freshest.name} last beat {age:.0f} s ago, longer than its limit "
                                  f"({limit.total_seconds():.0f} s)")
    return Check(role, True)
