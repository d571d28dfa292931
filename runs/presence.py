"""Who is up to advance runs: workers and supervisors say so in the database.

A `manage.py worker` renews its row every `WORKER_BEAT` seconds (from its main loop, beside the
sweep) and a `manage.py supervise` every `SUPERVISOR_BEAT` seconds; each removes its row when it
stops. A row is stamped with the database's clock, and read against it, so hosts whose clocks
differ still agree on its age; a process killed without stopping leaves a row that stops being
renewed and counts as gone once older than its role's `*_GONE_AFTER`.

A command that waits for a run (`start --wait`, `drift`, `plan`, `apply`, `decide`) asks
`worker_for(version)` before it starts anything: a worker of that version is up, or a supervisor
(which starts one as soon as a run is queued), or nobody is and the answer says why and the two
ways on. The same check, asked again while it follows a queued run, notices a worker that died.
"""
from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db.models.functions import Now

from runs.models import AppVersion, PresenceRole, WorkerPresence

WORKER_BEAT = 5.0  # a third of WORKER_GONE_AFTER: two beats may be late before a worker counts as gone
WORKER_GONE_AFTER = timedelta(seconds=15)
# A supervisor with no worker waits on a NOTIFY (or polls): a beat is its only query in between.
SUPERVISOR_BEAT = 20.0
SUPERVISOR_GONE_AFTER = timedelta(seconds=60)
FORGOTTEN_AFTER = timedelta(days=1)  # a row this old (a process killed long ago) is removed

WAYS_ON = ("start a worker in another terminal (`manage.py worker`), or pass --here to run it in this "
           "process")


def own_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def beat(*, role: str, version: str = "") -> None:
    """Say this process is up (first call: its row is made; later ones renew it)."""
    name = own_name()
    updated = WorkerPresence.objects.filter(pk=name).update(seen_at=Now(), role=role, version=version)
    if not updated:  # this process's first beat: rows of processes long gone go first
        WorkerPresence.objects.filter(seen_at__lt=Now() - FORGOTTEN_AFTER).delete()
        host, _, pid = name.rpartition(":")
        WorkerPresence.objects.update_or_create(
            pk=name, defaults={"role": role, "host": host, "pid": int(pid), "version": version,
                               "started_at": Now(), "seen_at": Now()})


def leave() -> None:
    """This process stops: its row goes."""
    WorkerPresence.objects.filter(pk=own_name()).delete()


@dataclass(frozen=True)
class Seen:
    name: str
    role: str
    version: str
    age: timedelta  # since its last beat, on the database's clock

    @property
    def alive(self) -> bool:
        limit = SUPERVISOR_GONE_AFTER if self.role == PresenceRole.SUPERVISOR else WORKER_GONE_AFTER
        return self.age <= limit


def seen() -> list[Seen]:
    """Every row, with its age read against the database's clock."""
    rows = WorkerPresence.objects.annotate(db_now=Now()).values_list("name", "role", "version", "seen_at", "db_now")
    found = []
    for name, role, version, seen_at, db_now in rows:
        found.append(Seen(name=name, role=role, version=version, age=max(_aware(db_now) - _aware(seen_at),
                                                                           timedelta(0))))
    return found


def _aware(moment: datetime) -> datetime:
    """A moment from the database, aware (in UTC when it came back naive)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Availability:
    """Whether a run of `version` will be advanced by some process; if not, what is missing and
    the ways on (`manage.py worker`, or `--here` for a command that has it)."""

    ok: bool
    missing: str = ""  # "no worker is running"
    fix: str = ""  # what to do about it
    workers: tuple[str, ...] = ()  # the live workers' names (of any version)

    @property
    def reason(self) -> str:
        return f"{self.missing}: {self.fix}" if not self.ok else ""


def runs_version(deploy: str, version: str) -> bool:
    """Whether a worker of the deploy version `deploy` advances runs of `version`: `version` is
    that deploy itself, or one of its workflow versions (a run's `app_version`)."""
    return any(_runs_versions([deploy], version).values())


def _runs_versions(deploys: list[str], version: str) -> dict[str, bool]:
    found = {deploy: deploy == version for deploy in deploys}
    for deploy, workflows in AppVersion.objects.filter(version__in=deploys).values_list("version", "workflows"):
        found[deploy] = found[deploy] or version in (workflows or {}).values()
    return found


def worker_for(version: str) -> Availability:
    """Is a worker up that advances runs of `version` (a run's workflow version, or a deploy
    version), or a supervisor that starts one? Otherwise why not."""
    alive = [s for s in seen() if s.alive]
    workers = [s for s in alive if s.role == PresenceRole.WORKER]
    names = tuple(s.name for s in workers)
    if any(s.role == PresenceRole.SUPERVISOR for s in alive) or (
            workers and any(_runs_versions(sorted({s.version for s in workers}), version).values())):
        return Availability(True, workers=names)
    if workers:
        others = sorted({s.version for s in workers})
        many = len(workers) > 1
        return Availability(
            False, workers=names,
            missing=(f"no worker runs {version}: the worker{'s' if many else ''} up ({', '.join(names)}) "
                     f"run{'' if many else 's'} {', '.join(others)}, started before the workflows changed"),
            fix=(f"restart {'them' if many else 'it'} (`manage.py worker`) on this code, or pass --here to run it "
                 "in this process"))
    return Availability(False, missing="no worker is running", fix=WAYS_ON)


__all__ = ["SUPERVISOR_BEAT", "WAYS_ON", "WORKER_BEAT", "Availability", "Seen", "beat", "leave", "runs_version",
           "seen", "worker_for"]
