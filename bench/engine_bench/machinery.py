"""bench/scale.py's (t): the transactions of a worker's own machinery, idle and busy.

A `manage.py worker` (2 processes) on the bench database, measured twice: idle (nothing queued,
nothing sleeping) for `idle` seconds, then busy (`runs` 10-step runs started while it is up). Two
counts, both load-independent:

- `pg_stat_database.xact_commit` of the bench database, every backend, less this process's own
  reads of it and of its polls (each counted as it is made);
- every statement the database's sessions sent, from PostgreSQL's own log (`log_statement = 'all'`
  set on the bench database alone, so only its new sessions log; the server's log is read from the
  offset it had when the window opened): each transaction counted once, a `BEGIN ... COMMIT` block
  or a statement alone, and named by what it does (the broker's take, the sweep's look, a claim, a
  step, ...), so the figure says where the transactions go.

pg_stat_statements needs the server's `shared_preload_libraries` (a restart of a shared server),
so the log stands in for it. Without a readable log (another host's server), the classification is
left out and the counts from `xact_commit` remain.
"""
from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from engine_bench.database import xact_commit
from engine_bench.worker import start_worker

FLUSH = 11.0  # PostgreSQL 15 flushes an idle backend's counts after 10 s (PGSTAT_IDLE_INTERVAL)
SERVER_LOG = Path("/var/log/postgresql/postgresql-15-main.log")

# What a transaction does, by the first statement in it that names it (first match wins).
KINDS: list[tuple[str, re.Pattern[str]]] = [
    ("broker: take a task", re.compile(r"DELETE FROM django_q_ormq", re.I)),
    ("start a run", re.compile(r'INSERT INTO "runs_run"', re.I)),
    ("advance: claim (and the steps read)", re.compile(r"UPDATE runs_run SET status = 'running', lease_owner", re.I)),
    ("advance: step (one statement)", re.compile(r"WITH lease AS", re.I)),
    ("advance: end (one statement)", re.compile(r"WITH ended AS", re.I)),
    ("advance: suspend", re.compile(r"UPDATE runs_run SET status = 'waiting'", re.I)),
    ("connection health check (SELECT 1)", re.compile(r"^SELECT 1$", re.I)),
    ("sweep: one look (due, leases, lost, next)",
     re.compile(r'"runs_run"\."lease_owner" AS|"runs_run"\."wake_at"', re.I)),
    ("sweep: wake or resend", re.compile(r"django_q_ormq|UPDATE \"?runs_run", re.I)),
    ("presence beat", re.compile(r"sanoma_worker_presence", re.I)),
    ("restart requested?", re.compile(r"restart", re.I)),
    ("schedules", re.compile(r"wakeups_schedulestate|schedule", re.I)),
    ("approval announcements", re.compile(r"announce", re.I)),
    ("pauses (cached read)", re.compile(r'"runs_pause"', re.I)),
    ("limit overrides (cached read)", re.compile(r'"runs_limitoverride"', re.I)),
    ("credentials", re.compile(r"credential", re.I)),
]

_RECORD = re.compile(r"^\d{4}-\d\d-\d\d \S+ \S+ \[(?P<pid>\d+)\] (?P<who>\S*)@(?P<db>\S+) "
                     r"(?P<level>[A-Z]+):\s+(?P<rest>.*)$")
_STATEMENT = re.compile(r"^(?:statement|execute [^:]*):\s?(?P<sql>.*)$", re.S)


def kind_of(statements: list[str]) -> str:
    text = "\n".join(statements)
    for name, pattern in KINDS:
        if pattern.search(text):
            return name
    return "other: " + (statements[0][:60] if statements else "?")


@dataclass
class Transactions:
    """A window's transactions: by `xact_commit`, and from the log, by kind."""

    seconds: float
    commits: int  # xact_commit, this process's own reads taken out
    kinds: Counter[str] = field(default_factory=Counter)
    logged_seconds: float = 0.0  # the log's window (the counts' is longer by FLUSH)

    @property
    def logged(self) -> int:
        return sum(self.kinds.values())


def log_offset() -> int | None:
    try:
        return SERVER_LOG.stat().st_size
    except OSError:
        return None


def logged_transactions(database: str, since: int | None, own_pid: int) -> Counter[str]:
    """The transactions the bench database's sessions (this process's excepted) ran after `since`
    (a byte offset of the server's log), by kind."""
    if since is None:
        return Counter()
    kinds: Counter[str] = Counter()
    open_blocks: dict[str, list[str]] = {}
    lines: list[tuple[str, list[str]]] = []
    with open(SERVER_LOG, errors="replace") as log:
        log.seek(since)
        current: list[str] | None = None  # the statement being read (a record goes on over lines)
        for raw in log:
            match = _RECORD.match(raw.rstrip("\n"))
            if match is None:
                if current is not None:
                    current.append(raw.strip())
                continue
            current = None
            if match["db"] != database or int(match["pid"]) == own_pid or match["level"] != "LOG":
                continue
            statement = _STATEMENT.match(match["rest"])
            if statement is None:
                continue
            current = [statement["sql"]]
            lines.append((match["pid"], current))
    for pid, parts in lines:
        sql = "\n".join(parts).strip()
        word = sql.split(None, 1)[0].upper().rstrip(";") if sql else ""
        if word in ("BEGIN", "START"):
            open_blocks[pid] = []
        elif word in ("COMMIT", "END"):
            kinds[kind_of(open_blocks.pop(pid, []))] += 1
        elif word == "ROLLBACK":
            open_blocks.pop(pid, None)
        elif pid in open_blocks:
            open_blocks[pid].append(sql)
        elif word in ("SET", "SHOW", "LISTEN", "UNLISTEN", "SAVEPOINT", "RELEASE"):
            continue  # a session's setup, not work
        else:
            kinds[kind_of([sql])] += 1
    return kinds


def _own_pid() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def _set_logging(url: str, on: bool) -> None:
    import psycopg
    from psycopg import sql

    from engine_bench.database import with_db

    name = urlparse(url).path.lstrip("/")
    with psycopg.connect(with_db(url, "postgres"), autocommit=True) as admin:
        if on:
            admin.execute(sql.SQL("ALTER DATABASE {} SET log_statement = 'all'").format(sql.Identifier(name)))
        else:
            admin.execute(sql.SQL("ALTER DATABASE {} RESET log_statement").format(sql.Identifier(name)))


def _window(seconds: float, database: str) -> Transactions:
    own = _own_pid()
    x0, offset = xact_commit(), log_offset()
    time.sleep(seconds)
    kinds = logged_transactions(database, offset, own)
    time.sleep(FLUSH)  # an idle backend reports its counts up to 10 s late
    x1 = xact_commit()
    # xact_commit() itself commits three reads (flush, clear, read): those of its second call counted.
    return Transactions(seconds=seconds + FLUSH, commits=x1 - x0 - 3, kinds=kinds, logged_seconds=seconds)


def worker_transactions(config: Any, env: dict[str, str], var: Path, url: str, *, idle: float, runs: int,
                        steps: int = 10, workers: int = 2) -> tuple[Transactions, Transactions, int]:
    """(idle window, busy window, steps run in the busy window)."""
    from runs import services
    from runs.models import Run, RunStatus

    database = urlparse(url).path.lstrip("/")
    _set_logging(url, True)
    from django.db import connections

    connections.close_all()  # this process's next session logs too (its own pid is left out)
    worker = start_worker(env, var / "machinery-worker.log", workers)
    try:
        time.sleep(3.0)  # the start's own work (the deploy, the first sweep) done
        quiet = _window(idle, database)
        own = _own_pid()
        x0, offset = xact_commit(), log_offset()
        started = time.monotonic()
        for i in range(runs):
            services.start(workflow="steps", input={"n": steps}, started_by="bench", run_id=f"t-{i}", config=config)
        polls = 0
        ends = time.monotonic() + 600
        while Run.objects.filter(id__startswith="t-").exclude(status=RunStatus.FINISHED).exists():
            polls += 1
            if time.monotonic() > ends:
                raise SystemExit("(t) the runs did not finish within 600 s")
            time.sleep(0.5)
        polls += 1
        seconds = time.monotonic() - started
        kinds = logged_transactions(database, offset, own)
        time.sleep(FLUSH)
        x1 = xact_commit() - round(quiet.commits / quiet.seconds * FLUSH)  # the idle worker's, meanwhile
        kinds["start a run"] += runs  # this process's own starts (its session is left out of the log)
        busy = Transactions(seconds=seconds, commits=x1 - x0 - 3 - polls, kinds=kinds)
    finally:
        worker.terminate_group()
        _set_logging(url, False)
    return quiet, busy, runs * steps


def report(quiet: Transactions, busy: Transactions, steps: int, runs: int) -> list[str]:
    lines = [f"idle worker (2 processes), {quiet.seconds:.0f} s: {quiet.commits} transactions "
             f"({quiet.commits / quiet.seconds:.2f} a second; in the server's log over {quiet.logged_seconds:.0f} s: "
             f"{quiet.logged}, {quiet.logged / max(quiet.logged_seconds, 1):.2f} a second)"]
    for name, n in quiet.kinds.most_common():
        lines.append(f"    {n / max(quiet.logged_seconds, 1):6.2f}/s  {name}")
    lines.append(f"busy: {runs} runs x {steps // runs} steps started while it was up, {busy.seconds:.1f} s: "
                 f"{busy.commits} transactions, {busy.commits / steps:.2f} a step "
                 f"({busy.logged} in the server's log, {busy.logged / steps:.2f} a step)")
    for name, n in busy.kinds.most_common():
        lines.append(f"    {n / steps:6.3f}/step {n / runs:7.2f}/run  {name}")
    return lines
