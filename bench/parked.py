"""Parked runs cost nothing: `.venv/bin/python bench/parked.py` on PostgreSQL,
`DATABASE_URL=postgresql://postgres@127.0.0.1:5432/sanoma_parked` (that database is dropped and
made again).

Parks runs on approvals, sleeps and messages (a third each) and measures, at each size (0, 10,000
and 100,000 parked by default), what must not grow with them:

- a new run's step (a 10-step run advanced in-process, per step),
- the sweep (due sleepers, expired leases, lost tasks: one pass),
- the next deadline (the earliest sleeper of the worker's versions),
- an approver's inbox (its first page and its count, as `/api/approvals` answers; and as the desk
  reads it: a page by key, counted to 100), the desk's inbox page (amy's; fin's first and next page),
- the runs list (first page and count, filtered by status `waiting`: an operator's and an approver's;
  and by `failed`, a status none of the parked runs is in),
- the desk's badge (the approver's pending count, counted to 99+; fin's too),
- the desk's runs list as a browser gets it (the whole page: its first page of `waiting` runs, the
  count at its foot, the search box's counts, the date bar, the filters' choices; with "Show
  counts", each status' count too; an operator's and an approver's), and the API's runs list,
- the API's runs list (`/api/runs?status=waiting`: its first page and count),
- the desk's home page (an approver's, with the badge) and its Versions page (each deploy version's
  unfinished runs, counted),
- a held run's start and park (start, one call, its approval asked and granted, suspended).

Each is printed at each size as the best of its repetitions (the machine's load only ever adds
time) and their median, beside the best with none parked: MET when within 10 % of it (or within
20 ms), MISSED otherwise. `cpu` is this process' CPU time for the figure (best of the repetitions,
judged the same way). For the reads, `db` is the database's own time for the queries the figure
sent (each run again under EXPLAIN ANALYZE, best of the repetitions), judged within 10 % or 0.5 ms:
on a machine shared with other work the wall time mostly measures the load, and these two tell
whether the figure grows with the parked runs. `q` is how many statements the figure sends.

The runs are made quickly: one of each kind is started and parked through the engine's own services
(`services.start`, `advance`), then copied in bulk with SQL (`INSERT ... SELECT` over
`generate_series`): the run, its steps, its approval and the guardian rows granting it, its ledger
records (linked by the chain's own trigger; a copy keeps its template's content digest, so `ledger
verify` of a copy fails: the database is the bench's own). The approvals are spread over 100 groups
(`team0` ... `team99`, every tenth to `finance` instead); the approver measured (`amy`) is in `team1`
and in the template's group, so her inbox grows by one per hundred held runs; `fin`, in `finance`,
which holds every tenth approval, shows an inbox that is large by its own right.

    --sizes 0,10000,100000   parked runs at each measure (cumulative, ascending)
    --page 50                runs of each kind copied before the first measure, so every list's first
                             page is as full with none parked as with 100,000 (a page of 3 rows is not
                             the same page as one of 50: the desk's list shows 50, the API's 20)
    --reps 15                repetitions of each figure (the best and the median are printed)
    --explain                print EXPLAIN ANALYZE of the badge, inbox, runs list and next deadline
    --slowest                at the largest size, each figure's three slowest reads (database time)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sanoma_site.settings")
os.environ.setdefault("SANOMA_VAR_DIR", "/tmp/var_parked")
os.environ["SANOMA_ROOT"] = str(REPO / "bench" / "parked_company")
os.environ["SANOMA_FAKES"] = "instance"
os.environ["SANOMA_APP_VERSION"] = "bench-parked"
# The bulk copies (90,000 runs and their rows in a statement) outlast the site's 30 s statement
# timeout on a loaded machine; the bench's database is its own.
os.environ.setdefault("SANOMA_DB_STATEMENT_TIMEOUT_SECONDS", "0")

import django  # noqa: E402
from engine_bench.common import bench_database_url, bench_parser  # noqa: E402
from engine_bench.database import recreate_database  # noqa: E402

EXAMPLE_DB = "sanoma_parked"  # the database of --help's example and of the refusal without DATABASE_URL


def options_parser() -> argparse.ArgumentParser:
    parser = bench_parser("parked.py", __doc__, EXAMPLE_DB)
    parser.add_argument("--sizes", default="0,10000,100000", help="parked runs at each measure (ascending)")
    parser.add_argument("--page", type=int, default=50, help="runs of each kind there before the first measure")
    parser.add_argument("--reps", type=int, default=15, help="repetitions of each figure (best and median printed)")
    parser.add_argument("--explain", action="store_true", help="print EXPLAIN ANALYZE of the read queries")
    parser.add_argument("--slowest", action="store_true",
                        help="at the largest size, print each figure's three slowest reads (the database's time)")
    return parser


# The options are read before the database is touched: --help (or a wrong option) drops nothing.
OPTIONS = options_parser().parse_args()
recreate_database(bench_database_url("parked.py", EXAMPLE_DB))
django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from runs import services  # noqa: E402
from runs.approvals import selectors as approval_selectors  # noqa: E402
from runs.config.registry import get_config  # noqa: E402
from runs.engine import clock  # noqa: E402
from runs.engine.advance import Advanced, advance  # noqa: E402
from runs.models import Run, RunStatus  # noqa: E402
from runs.selectors import list_runs  # noqa: E402
from runs.testing import make_user  # noqa: E402
from wakeups import idle, sweep  # noqa: E402

TEAMS = 100
KINDS = ("held", "nap", "waits")
WORKER = "bench-parked"


def setup_people() -> None:
    call_command("migrate", verbosity=0)
    make_user("bench", perms=["runs.start_workflow"])
    make_user("ops", perms=["runs.view_any_run", "runs.operate_runs"])
    make_user("amy", groups=["approvers", "team1"])
    make_user("fin", groups=["finance"])
    make_user("root", superuser=True)  # the Versions page is a superuser's
    from django.contrib.auth import get_user_model

    get_user_model().objects.filter(username__in=["ops", "amy", "fin"]).update(is_staff=True)  # they sign in
    from django.contrib.auth.models import Group

    Group.objects.bulk_create([Group(name=f"team{i}") for i in range(1, TEAMS)], ignore_conflicts=True)


def start_and_park(config: Any, workflow: str, input: dict[str, Any]) -> str:
    run = services.start(workflow=workflow, input=input, started_by="bench", config=config)
    for _ in range(10):
        if advance(run.id, worker_id=WORKER, config=config) != Advanced.QUEUED:
            break
    status, waiting = Run.objects.filter(pk=run.id).values_list("status", "waiting_for").get()
    if status != RunStatus.WAITING:
        raise SystemExit(f"{workflow} run {run.id} did not park: {status}")
    return run.id


def templates(config: Any) -> dict[str, str]:
    """One parked run of each kind, through the engine: what the copies are made from."""
    tomorrow = int((clock.now() + timedelta(days=1)).timestamp() * 1000)
    return {
        "held": start_and_park(config, "held", {"approver": "group:approvers"}),
        "nap": start_and_park(config, "nap", {"until_ms": tomorrow}),
        "waits": start_and_park(config, "waits", {"n": 0}),
    }


COPY_SQL = f"""
CREATE TEMP TABLE IF NOT EXISTS parked_copy (template text, id text, g integer, team text);
TRUNCATE parked_copy;
INSERT INTO parked_copy
    SELECT %(template)s, %(template)s || '-p' || g, g,
           CASE WHEN g %% 10 = 0 THEN 'finance' ELSE 'team' || (g %% {TEAMS}) END
    FROM generate_series(%(first)s, %(last)s) AS g;
INSERT INTO runs_run (id, workflow, app_version, input, started_by, groups, status, waiting_for, wake_at,
                      result, error, lease_owner, lease_until, signal_gen, has_approvals, has_retries,
                      parent_id, source_run, queued_at, created_at, updated_at, ended_at)
    SELECT c.id, r.workflow, r.app_version, r.input, r.started_by, r.groups, r.status, r.waiting_for,
           r.wake_at + make_interval(secs => c.g), r.result, r.error, r.lease_owner, r.lease_until,
           r.signal_gen, r.has_approvals, r.has_retries, NULL, '', r.queued_at,
           r.created_at - make_interval(secs => c.g + 60), r.updated_at, NULL
    FROM parked_copy c JOIN runs_run r ON r.id = c.template;
INSERT INTO runs_step (run_id, seq, kind, name, output, error, decision, attempt, next_seq, created_at)
    SELECT c.id, s.seq, s.kind, s.name, s.output, s.error, s.decision, s.attempt, s.next_seq, s.created_at
    FROM parked_copy c JOIN runs_step s ON s.run_id = c.template;
INSERT INTO runs_approval (run_id, approval_id, seq, title, approver, requested_by, covers, links, details, op,
                           op_input, op_seq, status, requested_at, decided_by, decided_at, note, decided_with,
                           refused)
    SELECT c.id, a.approval_id, a.seq, a.title, 'group:' || c.team, a.requested_by, a.covers, a.links, a.details,
           a.op, a.op_input, a.op_seq, a.status, a.requested_at, a.decided_by, a.decided_at, a.note,
           a.decided_with, a.refused
    FROM parked_copy c JOIN runs_approval a ON a.run_id = c.template;
INSERT INTO runs_approvalgroupobjectpermission (permission_id, group_id, content_object_id)
    SELECT p.permission_id, g.id, a.id
    FROM parked_copy c JOIN runs_approval a ON a.run_id = c.id
    JOIN auth_group g ON g.name = c.team
    JOIN runs_approvalgroupobjectpermission p ON p.content_object_id =
        (SELECT t.id FROM runs_approval t WHERE t.run_id = c.template AND t.approval_id = a.approval_id);
INSERT INTO runs_rungroupobjectpermission (permission_id, group_id, content_object_id)
    SELECT p.permission_id, g.id, c.id
    FROM parked_copy c JOIN auth_group g ON g.name = c.team
    JOIN runs_rungroupobjectpermission p ON p.content_object_id = c.template;
INSERT INTO runs_ledgerrecord (record_id, run_id, seq, v, app, at, actor, workflow, kind, body, "group",
                               chain_index, prev_hash, hash)
    SELECT replace(l.record_id, l.run_id, c.id), c.id, l.seq, l.v, l.app, l.at, l.actor, l.workflow, l.kind,
           l.body, l."group", -1, '', l.hash
    FROM parked_copy c JOIN runs_ledgerrecord l ON l.run_id = c.template
    ORDER BY c.g, l.chain_index;
"""


def park_copies(made: dict[str, str], first: int, last: int) -> None:
    """Copies numbered first..last of each template (so (last - first + 1) * 3 runs), in bulk."""
    with connection.cursor() as cursor:
        for kind in KINDS:
            cursor.execute(COPY_SQL, {"template": made[kind], "first": first, "last": last})
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")


def timed(fn: Callable[[], Any], reps: int) -> tuple[list[float], list[float]]:
    """`reps` timings of fn, in ms of wall time and of this process' CPU (one warm-up call first)."""
    fn()
    times, cpu = [], []
    for _ in range(reps):
        started, started_cpu = time.perf_counter(), time.process_time()
        fn()
        times.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
    return times, cpu


def step_ms(config: Any) -> float:
    """A new 10-step run's advance, per step."""
    run = services.start(workflow="steps", input={"n": 10}, started_by="bench", config=config)
    started = time.perf_counter()
    advance(run.id, worker_id=WORKER, config=config)
    elapsed = (time.perf_counter() - started) * 1000
    return elapsed / 10


def held_ms(config: Any) -> float:
    """A held run's start and park: started, its call made, its approval asked, suspended."""
    started = time.perf_counter()
    run = services.start(workflow="held", input={"approver": "group:approvers"}, started_by="bench", config=config)
    advance(run.id, worker_id=WORKER, config=config)
    return (time.perf_counter() - started) * 1000


def inbox_page(who: str) -> None:
    """The inbox as `/api/approvals` reads it: its first page and its whole count."""
    found = approval_selectors.inbox(principal=who)
    list(found[:20])
    found.count()


def desk_inbox_reads(who: str) -> None:
    """The inbox as the desk reads it: a page of 100 and one more, its count up to 101."""
    from runs.selectors import bounded_count

    found = approval_selectors.inbox(principal=who)
    list(found[:101])
    bounded_count(found, bound=100)


def inbox_next_url(who: str) -> str:
    """The desk inbox's second page for `who` (after its 100th approval), or its first when it has
    no second."""
    keys = list(approval_selectors.inbox(principal=who).values_list("pk", flat=True)[99:100])
    return f"/admin/runs/approval/?after={keys[0]}" if keys else "/admin/runs/approval/"


def runs_page(who: str, status: str = RunStatus.WAITING) -> None:
    list_runs(viewer=who, status=status, limit=20)


def page_of(who: str, url: str) -> Callable[[], Any]:
    """A GET of `url` as `who` (signed in; an API token for /api/), through the whole site (its
    middleware, the view, the template): 200 or the bench stops."""
    from django.contrib.auth import get_user_model
    from django.test import Client
    from rest_framework.authtoken.models import Token

    client = Client()
    user = get_user_model().objects.get(username=who)
    headers: dict[str, str] = {}
    if url.startswith("/api/"):
        headers["Authorization"] = f"Token {Token.objects.get_or_create(user=user)[0].key}"
    else:
        client.force_login(user)

    def get() -> None:
        answer = client.get(url, headers=headers)
        if answer.status_code != 200:
            raise SystemExit(f"{url} as {who}: {answer.status_code}")

    return get


def measures(config: Any) -> dict[str, Callable[[], Any]]:
    versions = config.owned_versions

    def one_sweep() -> None:
        sweep.wake_due_sleepers(versions)
        sweep.take_over_expired(versions)
        sweep.resend_lost(versions, "sanoma")

    return {
        "step (per step, 10-step run)": lambda: step_ms(config),
        "sweep (one pass)": one_sweep,
        "next deadline": lambda: idle.next_sleeper(versions),
        "inbox: amy (page + count)": lambda: inbox_page("amy"),
        "inbox reads: amy (page + count to 100)": lambda: desk_inbox_reads("amy"),
        "badge: amy (count to 99+)": lambda: approval_selectors.pending_badge(principal="amy"),
        "desk inbox: amy": page_of("amy", "/admin/runs/approval/"),
        "desk inbox: fin": page_of("fin", "/admin/runs/approval/"),
        "desk inbox next page: fin": page_of("fin", inbox_next_url("fin")),
        "runs list waiting: ops (page + count)": lambda: runs_page("ops"),
        "runs list waiting: amy (page + count)": lambda: runs_page("amy"),
        "runs list failed: ops (page + count)": lambda: runs_page("ops", RunStatus.FAILED),
        "desk runs list waiting: ops": page_of("ops", "/admin/runs/run/?status__exact=waiting"),
        "desk runs list waiting + counts: ops": page_of("ops", "/admin/runs/run/?status__exact=waiting&_facets="),
        "desk runs list (all): ops": page_of("ops", "/admin/runs/run/"),
        "desk runs list waiting: amy": page_of("amy", "/admin/runs/run/?status__exact=waiting"),
        "API runs list waiting: ops": page_of("ops", "/api/runs?status=waiting"),
        "desk home: amy": page_of("amy", "/admin/"),
        "desk versions page: root": page_of("root", "/admin/runs/appversion/"),
        "held run: start + park": lambda: held_ms(config),
        "(info) badge: fin (count to 99+)": lambda: approval_selectors.pending_badge(principal="fin"),
        "(info) desk home: fin": page_of("fin", "/admin/"),
    }


SELF_TIMED = ("step (per step, 10-step run)", "held run: start + park")


class Sent:
    """The statements sent while it is open, with their parameters (Django's own query log is
    emptied at the start of each request the test client makes, so it cannot count a page's)."""

    def __init__(self) -> None:
        self.statements: list[tuple[str, Any]] = []

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        self.statements.append((sql, params))
        return execute(sql, params, many, context)

    def __enter__(self) -> Sent:
        self._wrapped = connection.execute_wrapper(self)
        self._wrapped.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._wrapped.__exit__(*exc)

    def reads(self) -> list[tuple[str, Any]]:
        return [(sql, params) for sql, params in self.statements if sql.lstrip().upper().startswith(("SELECT", "WITH"))]


SLOWEST: dict[str, list[tuple[float, str]]] = {}  # a figure's slowest reads (--slowest)


def server_ms(fn: Callable[[], Any], reps: int, name: str = "") -> float:
    """The database's own time for the reads fn makes: each SELECT it sent run again under EXPLAIN
    ANALYZE, execution times summed; the best of `reps` (what the client's load does not touch)."""
    with Sent() as sent:
        fn()
    reads = sent.reads()
    best = [float("inf")] * len(reads)
    with connection.cursor() as cursor:
        for _ in range(reps):
            for i, (sql, params) in enumerate(reads):
                cursor.execute("EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) " + sql, params)
                plan = cursor.fetchone()[0]
                best[i] = min(best[i], (json.loads(plan) if isinstance(plan, str) else plan)[0]["Execution Time"])
    SLOWEST[name] = sorted(((ms, sql) for ms, (sql, _) in zip(best, reads, strict=True)), reverse=True)[:3]
    return sum(best)


Figures = dict[str, tuple[float, float, float | None, int, float | None]]


def measure(config: Any, reps: int) -> Figures:
    """Each figure's best and median of its timings, the database's time for its reads (ms), and
    the queries it sends."""
    figures: Figures = {}
    for name, fn in measures(config).items():
        with Sent() as sent:
            fn()
        if name in SELF_TIMED:
            times = [fn() for _ in range(max(5, reps // 3))]
            figures[name] = (min(times), statistics.median(times), None, len(sent.statements), None)
        else:
            times, cpu = timed(fn, reps)
            figures[name] = (min(times), statistics.median(times), server_ms(fn, reps, name), len(sent.statements),
                             min(cpu))
    return figures


def explain() -> None:
    from django.contrib.auth import get_user_model

    queries = {
        "badge (fin, to 100)": approval_selectors.pending_for(principal="fin").order_by().values("pk")[:100],
        "inbox page (amy)": approval_selectors.inbox(principal="amy")[:20],
        "runs list page (amy)": list_runs_query("amy"),
        "runs list page (ops)": list_runs_query("ops"),
    }
    get_user_model()
    for name, qs in queries.items():
        sql, params = qs.query.sql_with_params()
        with connection.cursor() as cursor:
            if name.startswith("badge"):
                sql = f"SELECT COUNT(*) FROM ({sql}) counted"
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS OFF, TIMING OFF, SUMMARY ON) " + sql, params)
            plan = "\n    ".join(row[0] for row in cursor.fetchall())
        print(f"  EXPLAIN ANALYZE {name}:\n    {plan}")


def list_runs_query(who: str) -> Any:
    from runs.selectors import RunFilter, matching_runs

    return matching_runs(viewer=who, where=RunFilter.parse(status=RunStatus.WAITING))[:20]


def verdict(base: float, now: float, slack: float = 20) -> str:
    """MET within 10 % of `base` or within `slack` ms of it (20 ms for a wall time, 0.5 ms for the
    database's own time: a query that grows shows long before it costs 20 ms)."""
    if now <= base * 1.10:
        return "MET"
    if now <= base + slack:
        return f"MET (within {slack:g} ms)"
    return "MISSED"


def main() -> None:
    options = OPTIONS
    sizes = sorted(int(s) for s in options.sizes.split(","))
    setup_people()
    config = get_config()
    made = templates(config)
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        server = cursor.fetchone()[0]
    print(f"database: PostgreSQL {server}; {options.reps} reps a figure (best, median); loaded machine figures",
          flush=True)
    copies = 0
    if options.page:
        park_copies(made, 1, options.page)
        copies = options.page
    results: dict[int, Figures] = {}
    for size in sizes:
        per_kind = size // len(KINDS)
        if per_kind > copies:
            started = time.perf_counter()
            park_copies(made, copies + 1, per_kind)
            print(f"parked {(per_kind - copies) * len(KINDS):,} more runs in {time.perf_counter() - started:.1f} s",
                  flush=True)
            copies = per_kind
        parked = Run.objects.filter(status=RunStatus.WAITING).count()
        results[size] = measure(config, options.reps)
        print(f"\n{parked:,} runs waiting ({copies * len(KINDS):,} parked copies; measure {size:,}):", flush=True)
        base = results[sizes[0]]
        for name, (best, median, server, queries, cpu) in results[size].items():
            said = "" if size == sizes[0] else f"  vs {base[name][0]:.2f} ms: {verdict(base[name][0], best)}"
            db = "" if server is None else f"; db {server:6.2f}"
            base_db, base_cpu = base[name][2], base[name][4]
            db_said = "" if server is None or base_db is None or size == sizes[0] else \
                f" (db vs {base_db:.2f}: {verdict(base_db, server, 0.5)})"
            cpu_said = "" if cpu is None else f"; cpu {cpu:6.2f}"
            if cpu is not None and base_cpu is not None and size != sizes[0]:
                cpu_said += f" vs {base_cpu:.2f}: {verdict(base_cpu, cpu)}"
            print(f"  {name:<40} {best:8.2f} ms (median {median:7.2f}{db}; {queries} q){said}{db_said}{cpu_said}",
                  flush=True)
            if options.slowest and server is not None and size == sizes[-1]:
                for ms, sql in SLOWEST.get(name, []):
                    print(f"      {ms:7.2f} ms  {sql[:300]}", flush=True)
        if options.explain:
            explain()


if __name__ == "__main__":
    main()
