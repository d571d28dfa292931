"""What a checkpointed step costs, beside a bare insert and DBOS Transact. Prints figures; not a test.

Usage (PostgreSQL only; the database named is DROPPED and created afresh, so give it its own name):

    .venv/bin/pip install -r bench/requirements.txt        # dbos (d) and py-spy, for the bench only
    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/sanoma_bench .venv/bin/python bench/engine.py
    ... bench/engine.py --quick          # smaller batches, about a minute
    ... bench/engine.py --profile FILE   # also cProfile the in-process steps (b) into FILE (pstats)
    ... bench/engine.py --skip-dbos      # without (d)

It measures, in one run, side by side:
  (a) a bare ORM insert-and-commit: one ~100-byte JSON row per `transaction.atomic()`
  (b) the engine's cost per checkpointed step: `steps` workflows of 10 calls on an in-memory fake,
      advanced in this process with `runs.engine.advance.advance`; also the marginal step (10-call runs
      minus 0-call runs, so the per-run claim/load/finish is not counted)
  (c) steps/s of 500 runs x 10 steps through a real `manage.py worker` with SANOMA_WORKERS=2, from
      the first run's start to the last run's end (database timestamps); (c2) the same with the runs
      started before the worker, from its first checkpoint to the last end (the workers alone)
  (d) the same 10-step workflow on DBOS Transact (dbos 3.4.0), each mode in its own process on its
      own fresh database `<name>_dbos_<mode>`: 500 direct calls in one thread, and 500 through a
      queue polled every 10 ms with worker_concurrency=10
  (e) database transactions per step: COMMITs Django issues (a wrapper on the connection's commit)
      plus statements run in autocommit (each commits itself), counted during (b); and `xact_commit` of
      pg_stat_database around (b) and (c)
      (on PostgreSQL every autocommit statement is a transaction too)
  (f) the delay between a sleep's deadline and the run's resumption (`nap`: ctx.sleep(until) then
      ctx.now(), whose recorded time is the resumption), p50/p95 over 20 runs with a worker up
  (g) where a step's time goes: the step's transaction alone, on the general path (ORM: BEGIN,
      lease UPDATE, Step INSERT, LedgerRecord INSERT, COMMIT; what SQLite uses), without the lease
      UPDATE, as hand-written SQL, and as one statement of data-modifying CTEs (1 round trip: what
      the engine does on PostgreSQL, runs/fastpath.py), wall and CPU
  (h) the engine's step (as (b)) with the ledger's hash chain and without it (its trigger disabled,
      no digest computed), rounds alternating; aim: the chain adds under 5 %
  (i) collection puts through ctx (`ctx.data.bench_notes.put`, the database driver: the record and
      its idempotency row in one transaction, then the step's checkpoint), in-process as (b), rounds
      alternating with the same number of `bench.step.do` steps; per put, marginal, and put/step;
      aim: a put costs at most 1.5x a step
  (j) messages delivered: runs waiting in `ctx.wait_message`, each sent one with
      `runs.services.send_message` (which wakes it) and then advanced in this process until it has
      read the message and finished; messages per second, send to finished, one after another
The config root is bench/bench_company/ (its fake stays in memory even under SANOMA_FAKES=instance).

Aims: one commit per step; a step at most 2x the bare insert; at least 4x DBOS-py's steps/s;
resumption within 1 s. The table says which are met.
"""
from __future__ import annotations

import argparse
import cProfile
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypedDict
from urllib.parse import urlparse, urlunparse

from pydantic import BaseModel

REPO = Path(__file__).resolve().parents[1]
BENCH_ROOT = REPO / "bench" / "bench_company"
VERSION = "bench"
# Figures measured earlier on machines like this one, printed beside today's for comparison.
NOTES = {"bare_insert_per_s": 1172, "dbos_steps_per_s": 241, "prototype_steps_per_s": 1100}


# ---- the database ---------------------------------------------------------------------------------


def with_db(url: str, name: str) -> str:
    parts = urlparse(url)
    return urlunparse(parts._replace(path="/" + name))


def recreate_database(url: str) -> None:
    import psycopg
    from psycopg import sql

    name = urlparse(url).path.lstrip("/")
    if not name or name in ("postgres", "template0", "template1"):
        raise SystemExit(f"DATABASE_URL must name a database of the bench's own (it is dropped); got {name!r}")
    with psycopg.connect(with_db(url, "postgres"), autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def xact_commit() -> int:
    """Committed transactions of this database so far, all backends (pending stats flushed first)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
    time.sleep(0.05)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
        return int(cursor.fetchone()[0])


class Counted:
    """COMMITs and statements issued on Django's default connection while active."""

    def __init__(self) -> None:
        self.commits = 0
        self.statements = 0
        self.autocommit_statements = 0

    @contextmanager
    def active(self) -> Iterator[Counted]:
        from django.db import connection

        connection.ensure_connection()
        # _commit is private to Django's backends, so django-stubs does not declare it.
        original = connection._commit  # type: ignore[attr-defined]

        def commit() -> Any:
            self.commits += 1
            return original()

        def count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            self.statements += 1
            if not connection.in_atomic_block:
                self.autocommit_statements += 1
            return execute(sql, params, many, context)

        connection._commit = commit  # type: ignore[attr-defined]  # private, not in django-stubs (above)
        try:
            with connection.execute_wrapper(count):
                yield self
        finally:
            del connection._commit  # type: ignore[attr-defined]  # private, not in django-stubs (above)


# ---- (a) bare insert -----------------------------------------------------------------------------


_BENCH_ROW = None


def bench_row_model() -> Any:
    """A step-like table of the bench's own: (run_id, seq) unique, run_id indexed, a JSON output."""
    global _BENCH_ROW
    if _BENCH_ROW is None:
        from django.db import models

        class BenchRow(models.Model):  # noqa: DJ008  (a throwaway probe table, never displayed)
            run_id = models.CharField(max_length=200)
            seq = models.IntegerField()
            output = models.JSONField()

            class Meta:
                app_label = "bench_probe"
                db_table = "bench_probe_row"
                constraints = [models.UniqueConstraint(fields=["run_id", "seq"], name="bench_probe_run_seq")]
                indexes = [models.Index(fields=["run_id"], name="bench_probe_run")]

        _BENCH_ROW = BenchRow
    return _BENCH_ROW


def bare_insert(rows: int) -> float:
    """Seconds per row: one small row per transaction.atomic(), like a checkpoint alone."""
    from django.db import connection, transaction

    BenchRow = bench_row_model()
    with connection.schema_editor() as editor:
        editor.create_model(BenchRow)
    payload = {"order_id": "1001", "amount_cents": 4500, "status": "ok", "note": "x" * 40}
    for i in range(200):  # warm up
        with transaction.atomic():
            BenchRow.objects.create(run_id="warm", seq=i, output=payload)
    started = time.perf_counter()
    for i in range(rows):
        with transaction.atomic():
            BenchRow.objects.create(run_id=f"r{i // 10}", seq=i % 10, output=payload)
    elapsed = time.perf_counter() - started
    with connection.schema_editor() as editor:
        editor.delete_model(BenchRow)
    return elapsed / rows


# ---- (b) and (e): the engine in this process ------------------------------------------------------


def start_runs(config: Any, prefix: str, count: int, steps: int) -> list[str]:
    from django_q.models import OrmQ

    from runs import services

    ids = [
        services.start(
            workflow="steps", input={"n": steps}, started_by="bench", run_id=f"{prefix}-{i}", config=config
        ).id
        for i in range(count)
    ]
    OrmQ.objects.all().delete()  # no cluster runs here: advance() is called directly
    return ids


def advance_all(config: Any, ids: list[str]) -> float:
    from runs.engine.advance import advance

    started, cpu = time.perf_counter(), time.process_time()
    for run_id in ids:
        outcome = advance(run_id, worker_id="bench-in-process", config=config)
        if outcome != "finished":
            raise SystemExit(f"run {run_id} did not finish in one advance: {outcome}")
    CPU_SPENT[0] = time.process_time() - cpu
    return time.perf_counter() - started


CPU_SPENT = [0.0]  # this process's CPU seconds in the last advance_all


class InProcess(TypedDict):
    """What in_process measures: seconds, transactions and statements per step (medians over rounds)."""

    per_step: float
    marginal: float
    commits: float
    commits_marginal: float
    statements: float
    statements_marginal: float
    xacts: float
    cpu: float
    cpu_marginal: float
    range: tuple[float, float]  # the fastest and slowest round's per_step


def in_process(config: Any, runs: int, steps: int, rounds: int, profile: str | None) -> InProcess:
    """(b) time per step, amortized and marginal; (e) commits and statements per step."""
    advance_all(config, start_runs(config, "warm", 20, steps))
    per_step, marginal, commits, commits_marginal, statements, statements_marginal, xacts = [], [], [], [], [], [], []
    cpu, cpu_marginal = [], []
    for r in range(rounds):
        full_ids = start_runs(config, f"b{r}-full", runs, steps)
        empty_ids = start_runs(config, f"b{r}-empty", runs, 0)
        full, empty = Counted(), Counted()
        x0 = xact_commit()
        with full.active():
            t_full = advance_all(config, full_ids)
        cpu_full = CPU_SPENT[0]
        x1 = xact_commit()
        with empty.active():
            t_empty = advance_all(config, empty_ids)
        cpu_empty = CPU_SPENT[0]
        n = runs * steps
        cpu.append(cpu_full / n)
        cpu_marginal.append((cpu_full - cpu_empty) / n)
        per_step.append(t_full / n)
        marginal.append((t_full - t_empty) / n)
        # A transaction is an explicit COMMIT or a statement run in autocommit (which commits itself).
        commits.append((full.commits + full.autocommit_statements) / n)
        commits_marginal.append(
            (full.commits + full.autocommit_statements - empty.commits - empty.autocommit_statements) / n
        )
        statements.append((full.statements + 0.0) / n)
        statements_marginal.append((full.statements - empty.statements) / n)
        xacts.append((x1 - x0 - 2) / n)  # the two xact_commit() reads are transactions too
    if profile:
        ids = start_runs(config, "prof", runs, steps)
        profiler = cProfile.Profile()
        profiler.enable()
        advance_all(config, ids)
        profiler.disable()
        profiler.dump_stats(profile)
    return {
        "per_step": statistics.median(per_step),
        "marginal": statistics.median(marginal),
        "commits": statistics.median(commits),
        "commits_marginal": statistics.median(commits_marginal),
        "statements": statistics.median(statements),
        "statements_marginal": statistics.median(statements_marginal),
        "xacts": statistics.median(xacts),
        "cpu": statistics.median(cpu),
        "cpu_marginal": statistics.median(cpu_marginal),
        "range": (min(per_step), max(per_step)),
    }


# ---- (i) collection puts and (j) messages --------------------------------------------------------


class BenchNote(BaseModel):
    key: str
    n: int
    text: str


class PutsInput(BaseModel):
    n: int = 10


def put_notes(ctx: Any, input: PutsInput) -> dict[str, int]:
    for i in range(input.n):
        ctx.data.bench_notes.put({"record": {"key": f"{ctx.run_id}:{i}", "n": i, "text": "x" * 40}})
    return {"puts": input.n}


def listen(ctx: Any, input: Any) -> dict[str, Any]:
    return {"heard": ctx.wait_message("go")}


def collections_config(config: Any, var: Path) -> Any:
    """The bench company with a collection and the two workflows above. The bench vendor stays on
    its in-memory fake; with a fake folder given, the collection is on the database driver."""
    from runs.authoring import define_collection, define_workflow
    from runs.config.resolution import SanomaConfig, resolve_config

    bench_notes = define_collection("bench_notes", record=BenchNote, key="key")
    puts_workflow = define_workflow(name="puts", input=PutsInput, uses=[bench_notes.put], run=put_notes)
    listen_workflow = define_workflow(name="listen", uses=["wait_message"], run=listen)
    # The config's own connectors and workflows (sanoma's and the built-in workflows come again with it).
    return resolve_config(
        SanomaConfig(app_name="bench", connectors=[c for c in config.connectors if c.vendor != "sanoma"],
                     workflows=[*(wf for wf in config.workflows.values() if not wf.builtin), puts_workflow,
                                listen_workflow],
                     collections=[bench_notes]),
        fakes="instance", fake_dir=var / "fakes", app_version=VERSION)


def start_many(config: Any, workflow: str, prefix: str, count: int, input: dict[str, Any]) -> list[str]:
    from django_q.models import OrmQ

    from runs import services

    ids = [services.start(workflow=workflow, input=input, started_by="bench", run_id=f"{prefix}-{i}",
                          config=config).id for i in range(count)]
    OrmQ.objects.all().delete()  # no cluster runs here: advance() is called directly
    return ids


def collection_puts(config: Any, runs: int, puts: int, rounds: int) -> dict[str, float]:
    """(i) seconds per put and per step (10-call runs), and marginal (minus 0-call runs), medians
    over rounds that alternate which goes first."""
    from runs.models import CollectionRecord

    if "data" in config.fakes or config.drivers["data.bench_notes.put"].vendor != "data":
        raise SystemExit("(i) the collection must be on the database driver")
    advance_all(config, start_many(config, "puts", "i-warm", 20, {"n": puts}))
    found: dict[str, list[float]] = {"put": [], "step": [], "put_marginal": [], "step_marginal": []}
    for r in range(rounds):
        for kind in ("put", "step") if r % 2 == 0 else ("step", "put"):
            workflow = "puts" if kind == "put" else "steps"
            full = advance_all(config, start_many(config, workflow, f"i{r}-{kind}-full", runs, {"n": puts}))
            empty = advance_all(config, start_many(config, workflow, f"i{r}-{kind}-empty", runs, {"n": 0}))
            found[kind].append(full / (runs * puts))
            found[kind + "_marginal"].append((full - empty) / (runs * puts))
    stored = CollectionRecord.objects.filter(collection="bench_notes").count()
    expected = (20 + rounds * runs) * puts
    if stored != expected:
        raise SystemExit(f"(i) {stored} records stored, expected {expected}")
    return {name: statistics.median(values) for name, values in found.items()}


def messages_delivered(config: Any, runs: int) -> dict[str, float]:
    """(j) messages per second: send (waking the waiting run) then advance it until it has read it."""
    from django_q.models import OrmQ

    from runs import services
    from runs.engine.advance import advance
    from runs.models import Run

    ids = start_many(config, "listen", "j", runs, {})
    for run_id in ids:
        if advance(run_id, worker_id="bench-in-process", config=config) != "waiting":
            raise SystemExit(f"(j) run {run_id} is not waiting for its message")
    counted = Counted()
    with counted.active():
        started = time.perf_counter()
        for n, run_id in enumerate(ids):
            services.send_message(run_id=run_id, topic="go", payload={"n": n}, by="bench")
            outcome = advance(run_id, worker_id="bench-in-process", config=config)
            if outcome != "finished":
                raise SystemExit(f"(j) run {run_id} did not finish after its message: {outcome}")
        elapsed = time.perf_counter() - started
    OrmQ.objects.all().delete()
    heard = Run.objects.filter(pk__in=ids, status="finished").values_list("result", flat=True)
    if sorted((r or {})["heard"]["n"] for r in heard) != list(range(runs)):
        raise SystemExit("(j) not every run read its own message")
    return {"per_s": runs / elapsed, "each": elapsed / runs, "statements": counted.statements / runs,
            "commits": (counted.commits + counted.autocommit_statements) / runs}


# ---- (h) the ledger's hash chain ---------------------------------------------------------------


_PLAIN_INDEX = itertools.count(10**6)  # chain_index of records written with the chain off: never repeated


@contextmanager
def chain_off() -> Iterator[None]:
    """The ledger as before its hash chain: no link trigger, no digest in Python. Each record still
    gets a distinct chain_index (a counter), so the (run_id, chain_index) unique index that replaced
    the run_id index is maintained in both modes."""
    from django.db import connection

    from runs import ledger_chain
    from runs.engine import transitions

    def plain(record: Any, using: str) -> None:
        record.chain_index, record.prev_hash, record.hash = next(_PLAIN_INDEX), "", ""

    originals = ledger_chain.prepare, transitions.ledger_prepare
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE runs_ledgerrecord DISABLE TRIGGER runs_ledgerrecord_chain")
    ledger_chain.prepare = transitions.ledger_prepare = plain
    try:
        yield
    finally:
        ledger_chain.prepare, transitions.ledger_prepare = originals
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE runs_ledgerrecord ENABLE TRIGGER runs_ledgerrecord_chain")


def hash_chain_cost(config: Any, runs: int, steps: int, rounds: int) -> dict[str, float]:
    """(h) the engine's step with the hash chain and without it, rounds alternating (seconds per step,
    medians): per_step over 10-call runs, and marginal (minus 0-call runs)."""
    from contextlib import nullcontext

    from runs import ledger

    found: dict[str, list[float]] = {"with": [], "without": [], "with_marginal": [], "without_marginal": []}
    for r in range(rounds):
        for mode in ("with", "without") if r % 2 == 0 else ("without", "with"):
            with chain_off() if mode == "without" else nullcontext():
                full = advance_all(config, start_runs(config, f"h{r}-{mode}-full", runs, steps))
                empty = advance_all(config, start_runs(config, f"h{r}-{mode}-empty", runs, 0))
            found[mode].append(full / (runs * steps))
            found[mode + "_marginal"].append((full - empty) / (runs * steps))
    result = {name: statistics.median(values) for name, values in found.items()}
    checked = ledger.verify("h0-with-full-0")  # a run written with the chain: its chain holds
    if checked.breaks or not checked.records:
        raise SystemExit(f"(h) the chain does not verify: {checked}")
    return result


# ---- (g) where a step's time goes --------------------------------------------------------------


def _insert_select(model: Any, obj: Any, source: str) -> tuple[str, list[Any]]:
    """`INSERT INTO <table> (<columns>) SELECT <values> FROM <source>`, columns from the model."""
    from django.db import connection

    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    params = [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields]
    values = ", ".join("%s" for _ in fields)
    return f"INSERT INTO {model._meta.db_table} ({columns}) SELECT {values} FROM {source}", params


def step_anatomy(config: Any, steps: int) -> dict[str, float]:
    """The step's transaction alone, four ways, on one leased run (seconds per step):
    engine  = what Segment.commit does: atomic { lease UPDATE; Step save; LedgerRecord save }
    no_lease= the same without the lease UPDATE
    raw     = the engine's three statements as hand-written SQL inside atomic (no ORM compiling)
    cte     = one statement in autocommit: the lease UPDATE and both INSERTs as data-modifying CTEs
              (PostgreSQL), inserting nothing when the lease is not ours: 1 round trip, 1 commit
    cte_guard = cte with the lease checked by a SELECT instead of renewed (renewal only when less
              than 2/3 of the lease remains): the run row, with its 14 indexes, is not rewritten."""
    from datetime import timedelta

    from django.conf import settings
    from django.db import connection, transaction
    from django_q.models import OrmQ

    from runs import ledger, services
    from runs.engine import clock
    from runs.engine.advance import claim
    from runs.models import LedgerRecord, Run, RunStatus, Step, StepKind

    run_id = services.start(workflow="steps", input={"n": 0}, started_by="bench", run_id="g-anatomy", config=config).id
    OrmQ.objects.all().delete()
    if not claim(run_id, worker_id="g", version=config.version):
        raise SystemExit("(g) could not claim its run")
    run = Run.objects.get(pk=run_id)
    lease = timedelta(seconds=settings.SANOMA_LEASE_SECONDS)
    seqs = iter(range(1, 10**9))

    def objects() -> tuple[Any, Any]:
        seq = next(seqs)
        step = Step(run=run, seq=seq, kind=StepKind.CALL, name="bench.step.do", output={"n": seq, "done": seq},
                    error=None, decision={"kind": "allow", "reasons": []}, attempt=1, next_seq=seq + 1,
                    created_at=clock.now())
        body = {"op": "bench.step.do", "effect": "write", "input": {"n": seq}, "decision": {"kind": "allow"},
                "duration_ms": 0, "output": {"n": seq, "done": seq}, "attempt": 1}
        return step, ledger.build(run, kind="op.called", seq=seq, body=body, app=config.app_name)

    def engine() -> None:
        step, record = objects()
        with transaction.atomic():
            now = clock.now()
            if not Run.objects.filter(pk=run.pk, lease_owner="g", status=RunStatus.RUNNING).update(
                    lease_until=now + lease, updated_at=now):
                raise SystemExit("(g) lost the lease")
            step.save(force_insert=True)
            record.save(force_insert=True)

    def no_lease() -> None:
        step, record = objects()
        with transaction.atomic():
            step.save(force_insert=True)
            record.save(force_insert=True)

    update_sql = ("UPDATE runs_run SET lease_until = %s, updated_at = %s "
                  "WHERE id = %s AND lease_owner = %s AND status = 'running'")

    def raw() -> None:
        step, record = objects()
        now = clock.now()
        step_sql, step_params = _insert_select(Step, step, "(SELECT 1) AS one")
        record_sql, record_params = _insert_select(LedgerRecord, record, "(SELECT 1) AS one")
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(update_sql, [now + lease, now, run.pk, "g"])
            if cursor.rowcount != 1:
                raise SystemExit("(g) lost the lease")
            cursor.execute(step_sql, step_params)
            cursor.execute(record_sql, record_params)

    def cte() -> None:
        step, record = objects()
        now = clock.now()
        step_sql, step_params = _insert_select(Step, step, "lease")
        record_sql, record_params = _insert_select(LedgerRecord, record, "lease")
        sql = (f"WITH lease AS ({update_sql} RETURNING id), "
               f"step AS ({step_sql} RETURNING 1), record AS ({record_sql} RETURNING 1) "
               "SELECT (SELECT count(*) FROM lease), (SELECT count(*) FROM step), (SELECT count(*) FROM record)")
        with connection.cursor() as cursor:
            cursor.execute(sql, [now + lease, now, run.pk, "g", *step_params, *record_params])
            if cursor.fetchone() != (1, 1, 1):
                raise SystemExit("(g) lost the lease")

    def cte_guard() -> None:
        # Like cte, but the lease is only checked (still ours, running, not near expiry), not renewed:
        # what a step would do while more than 2/3 of its lease remains.
        step, record = objects()
        now = clock.now()
        step_sql, step_params = _insert_select(Step, step, "lease")
        record_sql, record_params = _insert_select(LedgerRecord, record, "lease")
        sql = ("WITH lease AS (SELECT id FROM runs_run WHERE id = %s AND lease_owner = %s AND status = 'running' "
               f"AND lease_until > %s), step AS ({step_sql} RETURNING 1), record AS ({record_sql} RETURNING 1) "
               "SELECT (SELECT count(*) FROM lease), (SELECT count(*) FROM step), (SELECT count(*) FROM record)")
        with connection.cursor() as cursor:
            cursor.execute(sql, [run.pk, "g", now + timedelta(seconds=1), *step_params, *record_params])
            if cursor.fetchone() != (1, 1, 1):
                raise SystemExit("(g) lost the lease")

    timings = {}
    for name, fn in (("engine", engine), ("no_lease", no_lease), ("raw", raw), ("cte", cte), ("cte_guard", cte_guard)):
        for _ in range(100):
            fn()
        started, cpu = time.perf_counter(), time.process_time()
        for _ in range(steps):
            fn()
        timings[name] = (time.perf_counter() - started) / steps
        timings[name + "_cpu"] = (time.process_time() - cpu) / steps
    return timings


# ---- (c) and (f): a real worker ------------------------------------------------------------------


def start_worker(env: dict[str, str], log: Path, workers: int):
    sys.path.insert(0, str(REPO))
    from wakeups.tests.worker_company.harness import Worker

    worker_env = {**{k: v for k, v in os.environ.items() if not k.startswith("DJANGO_SETTINGS")}, **env,
                  "SANOMA_WORKERS": str(workers), "DJANGO_SETTINGS_MODULE": "sanoma_site.settings",
                  "PYTHONUNBUFFERED": "1"}
    return Worker(worker_env, log).start(ready_within=60)


def with_worker(config: Any, runs: int, steps: int) -> dict[str, float]:
    """(c): start `runs` runs while the worker is up; steps/s from first start to last end."""
    from django.db.models import Max, Min

    from runs import services
    from runs.models import Run, RunStatus

    x0 = xact_commit()
    wall = time.perf_counter()
    for i in range(runs):
        services.start(workflow="steps", input={"n": steps}, started_by="bench", run_id=f"c-{i}", config=config)
    enqueued = time.perf_counter() - wall
    ends = time.monotonic() + 600
    while Run.objects.filter(id__startswith="c-").exclude(status=RunStatus.FINISHED).exists():
        if time.monotonic() > ends:
            raise SystemExit("(c) did not finish within 600 s")
        time.sleep(0.05)
    x1 = xact_commit()
    span = Run.objects.filter(id__startswith="c-").aggregate(first=Min("created_at"), last=Max("ended_at"))
    seconds = (span["last"] - span["first"]).total_seconds()
    return {"steps_per_s": runs * steps / seconds, "runs_per_s": runs / seconds, "seconds": seconds,
            "enqueue_per_s": runs / enqueued, "xacts": (x1 - x0) / (runs * steps)}


def queue_before_worker(config: Any, runs: int, steps: int) -> None:
    """(c2): runs started before any worker is up, so the workers alone set the pace."""
    from runs import services

    for i in range(runs):
        services.start(workflow="steps", input={"n": steps}, started_by="bench", run_id=f"q-{i}", config=config)


def drained_by_worker(runs: int, steps: int) -> dict[str, float]:
    """(c2): steps/s from the workers' first checkpoint to the last run's end."""
    from django.db.models import Max, Min

    from runs.models import Run, RunStatus, Step

    ends = time.monotonic() + 600
    while Run.objects.filter(id__startswith="q-").exclude(status=RunStatus.FINISHED).exists():
        if time.monotonic() > ends:
            raise SystemExit("(c2) did not finish within 600 s")
        time.sleep(0.05)
    first = Step.objects.filter(run__id__startswith="q-").aggregate(first=Min("created_at"))["first"]
    last = Run.objects.filter(id__startswith="q-").aggregate(last=Max("ended_at"))["last"]
    seconds = (last - first).total_seconds()
    return {"steps_per_s": runs * steps / seconds, "seconds": seconds}


def sleep_resumption(config: Any, runs: int) -> dict[str, float]:
    """(f): naps whose deadlines fall over ~4 s while the worker is idle; delay = ctx.now() - until."""
    from runs import services
    from runs.engine import clock
    from runs.models import Run, RunStatus, Step

    base = clock.now_ms() + 2000
    deadlines = {f"f-{i}": base + i * 200 + (i * 37) % 100 for i in range(runs)}
    for run_id, until in deadlines.items():
        services.start(workflow="nap", input={"until_ms": until}, started_by="bench", run_id=run_id, config=config)
    ends = time.monotonic() + 120
    while Run.objects.filter(id__in=deadlines).exclude(status=RunStatus.FINISHED).exists():
        if time.monotonic() > ends:
            raise SystemExit("(f) the naps did not finish within 120 s")
        time.sleep(0.05)

    def resumed_at(run_id: str) -> int:
        output = Step.objects.get(run_id=run_id, seq=2).output  # ctx.now(): {"at": ms}
        if output is None:
            raise SystemExit(f"(f) {run_id} recorded no time for its ctx.now()")
        return output["at"]

    delays = sorted(resumed_at(run_id) - until for run_id, until in deadlines.items())
    return {"p50": statistics.median(delays), "p95": delays[max(0, int(round(0.95 * len(delays))) - 1)],
            "max": delays[-1], "min": delays[0]}


# ---- (d) DBOS, in a child process per mode ---------------------------------------------------------


def dbos_child(mode: str, runs: int, steps: int) -> None:
    """Runs in its own process on a fresh database; prints one JSON line."""
    url = os.environ["DATABASE_URL"]
    name = f"{urlparse(url).path.lstrip('/')}_dbos_{mode}"
    recreate_database(with_db(url, name))
    # dbos is a bench-only dependency (bench/requirements.txt), not installed in the project's venv.
    from dbos import DBOS

    DBOS(config={"name": "sanoma-bench", "system_database_url": with_db(url, name)})

    @DBOS.step()
    def trivial(n: int) -> dict:
        return {"n": n}

    @DBOS.workflow()
    def workflow(count: int) -> int:
        for n in range(count):
            trivial(n)
        return count

    launched = time.perf_counter()
    DBOS.launch()
    launch = time.perf_counter() - launched
    for _ in range(10):  # warm up
        workflow(steps)
    if mode == "direct":
        started = time.perf_counter()
        for _ in range(runs):
            workflow(steps)
        seconds = time.perf_counter() - started
    else:
        queue = DBOS.register_queue("bench", polling_interval_sec=0.01, worker_concurrency=10)
        started = time.perf_counter()
        handles = [queue.enqueue(workflow, steps) for _ in range(runs)]
        for handle in handles:
            handle.get_result(polling_interval_sec=0.005)
        seconds = time.perf_counter() - started
    print(json.dumps({"mode": mode, "steps_per_s": runs * steps / seconds, "seconds": seconds, "launch": launch}))
    sys.stdout.flush()
    DBOS.destroy()
    os._exit(0)  # DBOS's background threads must not hold the process open


def dbos(mode: str, runs: int, steps: int) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, __file__, "--dbos-child", mode, "--runs", str(runs), "--steps", str(steps)],
        capture_output=True, text=True, timeout=900, env={**os.environ},
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"DBOS ({mode}) failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1])


# ---- main ------------------------------------------------------------------------------------------


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller batches")
    parser.add_argument("--skip-dbos", action="store_true")
    parser.add_argument("--only-collections", action="store_true",
                        help="only (i) collection puts and (j) messages (after a warm-up)")
    parser.add_argument("--profile", metavar="FILE", help="cProfile one in-process batch of (b) into FILE")
    parser.add_argument("--workers", type=int, default=2, help="SANOMA_WORKERS for (c) and (f)")
    parser.add_argument("--dbos-child", choices=("direct", "queue"), help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, default=500, help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=10, help=argparse.SUPPRESS)
    args = parser.parse_args()
    url = os.environ.get("DATABASE_URL", "")
    if urlparse(url).scheme not in ("postgres", "postgresql"):
        raise SystemExit("Set DATABASE_URL=postgresql://user@host:port/<a bench database>; see the docstring")
    if args.dbos_child:
        return dbos_child(args.dbos_child, args.runs, args.steps)

    inserts, b_runs, rounds, c_runs, f_runs, d_runs = (
        (1000, 50, 2, 200, 10, 200) if args.quick else (3000, 100, 3, 500, 20, 500)
    )
    recreate_database(url)
    var = Path(tempfile.mkdtemp(prefix="sanoma-bench-"))
    env = {"DATABASE_URL": url, "SANOMA_ROOT": str(BENCH_ROOT), "SANOMA_FAKES": "instance",
           "SANOMA_APP_VERSION": VERSION, "SANOMA_VAR_DIR": str(var), "SANOMA_LOG_LEVEL": "WARNING"}
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "sanoma_site.settings"
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command

    from runs.config.registry import set_config
    from runs.config.resolution import load_config
    from runs.testing import make_user

    call_command("migrate", verbosity=0)
    config = load_config(BENCH_ROOT, fakes="instance", app_version=VERSION)
    set_config(config)
    make_user("bench", perms=["runs.start_workflow"])

    print(f"bench database {urlparse(url).path.lstrip('/')}; python {sys.version.split()[0]}; {os.cpu_count()} cores")
    collections = collections_config(config, var)
    puts = collection_puts(collections, b_runs, 10, 2 * rounds)
    put_ratio = puts["put"] / puts["step"]
    print(f"(i) collection put: {ms(puts['put'])} (marginal {ms(puts['put_marginal'])}); step beside it "
          f"{ms(puts['step'])} (marginal {ms(puts['step_marginal'])}); put/step {put_ratio:.2f}x "
          f"(marginal {puts['put_marginal'] / puts['step_marginal']:.2f}x)")
    messages = messages_delivered(collections, c_runs)
    print(f"(j) messages delivered: {messages['per_s']:.0f}/s ({ms(messages['each'])} from send to the run "
          f"finished having read it; {messages['statements']:.0f} statements, {messages['commits']:.0f} "
          "transactions each)")
    if args.only_collections:
        put_verdict = "MET" if put_ratio <= 1.5 else "MISSED"
        print(f"\naim: {'a collection put at most 1.5x a step'.ljust(36)} {put_verdict.ljust(6)} {put_ratio:.2f}x")
        return None
    bare = statistics.median(bare_insert(inserts) for _ in range(3))
    print(f"(a) bare insert: {ms(bare)}")
    engine = in_process(config, b_runs, 10, rounds, args.profile)
    print(f"(b) engine step: {ms(engine['per_step'])} (marginal {ms(engine['marginal'])})")
    anatomy = step_anatomy(config, 500 if args.quick else 2000)
    print("(g) step transaction: " + ", ".join(f"{k} {ms(v)}" for k, v in anatomy.items() if not k.endswith("_cpu")))
    chain = hash_chain_cost(config, b_runs, 10, 4 if args.quick else 6)
    chain_extra = chain["with"] / chain["without"] - 1
    print(f"(h) step with the hash chain {ms(chain['with'])}, without {ms(chain['without'])} ({chain_extra:+.1%})")
    log = var / "worker.log"
    queue_before_worker(config, c_runs, 10)
    worker = start_worker(env, log, args.workers)
    try:
        c2 = drained_by_worker(c_runs, 10)
        print(f"(c2) worker, runs queued before it started: {c2['steps_per_s']:.0f} steps/s")
        c = with_worker(config, c_runs, 10)
        print(f"(c) worker: {c['steps_per_s']:.0f} steps/s (starting {c['enqueue_per_s']:.0f} runs/s meanwhile)")
        f = sleep_resumption(config, f_runs)
        print(f"(f) resumption: p50 {f['p50']:.0f} ms, p95 {f['p95']:.0f} ms")
        code = worker.terminate(within=60)
    except BaseException:
        print(worker.describe())
        raise
    finally:
        worker.cleanup()
    d = {}
    if not args.skip_dbos:
        d = {mode: dbos(mode, d_runs, 10) for mode in ("direct", "queue")}
        print("(d) DBOS: " + ", ".join(f"{m} {r['steps_per_s']:.0f} steps/s" for m, r in d.items()))

    dbos_best = max((r["steps_per_s"] for r in d.values()), default=None)
    rows = [
        ("(a) bare ORM insert+commit", f"{ms(bare)} = {1 / bare:,.0f}/s",
         f"earlier on this machine: 0.85 ms = {NOTES['bare_insert_per_s']:,}/s"),
        ("(b) engine, per step (10-call runs, in-process)",
         f"{ms(engine['per_step'])} = {1 / engine['per_step']:,.0f} steps/s",
         f"{engine['per_step'] / bare:.2f}x bare insert"),
        ("(b) engine, marginal step (minus per-run cost)", ms(engine["marginal"]),
         f"{engine['marginal'] / bare:.2f}x bare insert"),
        ("(b) ... of which Python CPU in this process", f"{ms(engine['cpu'])} (marginal {ms(engine['cpu_marginal'])})",
         "the rest is waiting on PostgreSQL"),
        ("(c) 2 worker processes, 500x10 steps" if not args.quick else f"(c) worker, {c_runs}x10 steps",
         f"{c['steps_per_s']:,.0f} steps/s ({c['runs_per_s']:.0f} runs/s, {c['seconds']:.2f} s)",
         f"earlier prototype: {NOTES['prototype_steps_per_s']:,} steps/s"),
        ("(c2) the same, runs queued before the workers started",
         f"{c2['steps_per_s']:,.0f} steps/s ({c2['seconds']:.2f} s)",
         "the workers alone: no starts competing for the 2 cores"),
    ]
    for mode, r in d.items():
        label = "direct calls, 1 thread" if mode == "direct" else "queue, poll 10 ms, concurrency 10"
        rows.append(
            (f"(d) DBOS-py, {label}", f"{r['steps_per_s']:,.0f} steps/s",
             f"earlier on this machine: {NOTES['dbos_steps_per_s']} steps/s")
        )
    rows += [
        ("(e) transactions per step (COMMITs + autocommit statements; all / marginal)",
         f"{engine['commits']:.2f} / {engine['commits_marginal']:.2f}",
         f"statements {engine['statements']:.1f} / {engine['statements_marginal']:.1f}"),
        ("(e) pg xact_commit per step (in-process)", f"{engine['xacts']:.2f}", "incl. autocommit reads of claim/load"),
        ("(e) pg xact_commit per step (with worker, whole system)", f"{c['xacts']:.2f}", "incl. broker, start, sweep"),
        ("(g) step txn, general path (ORM, 5 round trips; SQLite)",
         f"{ms(anatomy['engine'])} (CPU {ms(anatomy['engine_cpu'])})",
         f"{anatomy['engine'] / engine['marginal']:.0%} of the marginal step"),
        ("(g) ... without the lease UPDATE", f"{ms(anatomy['no_lease'])} (CPU {ms(anatomy['no_lease_cpu'])})",
         "Step + LedgerRecord saves in atomic"),
        ("(g) ... same 3 statements, hand-written SQL", f"{ms(anatomy['raw'])} (CPU {ms(anatomy['raw_cpu'])})",
         "ORM cost = engine - raw"),
        ("(g) ... one CTE statement: the engine on PostgreSQL", f"{ms(anatomy['cte'])} (CPU {ms(anatomy['cte_cpu'])})",
         f"{anatomy['cte'] / bare:.2f}x bare insert"),
        ("(g) ... one CTE, lease checked not renewed",
         f"{ms(anatomy['cte_guard'])} (CPU {ms(anatomy['cte_guard_cpu'])})",
         f"{anatomy['cte_guard'] / bare:.2f}x bare insert"),
        ("(h) engine step WITH the ledger's hash chain (10-call runs)", ms(chain["with"]),
         f"marginal {ms(chain['with_marginal'])}"),
        ("(h) ... the same WITHOUT it (no trigger, no digest)", ms(chain["without"]),
         f"marginal {ms(chain['without_marginal'])}; the chain costs {chain_extra:+.1%} "
         f"(marginal {chain['with_marginal'] / chain['without_marginal'] - 1:+.1%})"),
        ("(f) sleep deadline -> resumed", f"p50 {f['p50']:.0f} ms, p95 {f['p95']:.0f} ms (max {f['max']:.0f})",
         f"{f_runs} runs, worker up"),
        ("(i) collection put through ctx (database driver, 10-put runs)",
         f"{ms(puts['put'])} = {1 / puts['put']:,.0f} puts/s",
         f"{put_ratio:.2f}x a step measured beside it ({ms(puts['step'])})"),
        ("(i) ... marginal put (minus per-run cost)", ms(puts["put_marginal"]),
         f"{puts['put_marginal'] / puts['step_marginal']:.2f}x the marginal step ({ms(puts['step_marginal'])})"),
        ("(j) messages delivered (send -> run read it and finished)", f"{messages['per_s']:,.0f}/s",
         f"{ms(messages['each'])} each, {messages['statements']:.0f} statements; in-process, {c_runs} runs"),
    ]
    width = max(len(r[0]) for r in rows)
    vwidth = max(len(r[1]) for r in rows)
    print("\n" + "measure".ljust(width) + " | " + "value".ljust(vwidth) + " | reference")
    print("-" * width + "-+-" + "-" * vwidth + "-+-" + "-" * 30)
    for name, value, ref in rows:
        print(f"{name.ljust(width)} | {value.ljust(vwidth)} | {ref}")

    aims = [
        ("one commit per step", engine["commits_marginal"] <= 1.0 + 1e-9,
         f"{engine['commits_marginal']:.2f} transaction per marginal step, "
         f"{engine['commits']:.2f} with per-run cost"),
        ("a step at most 2x the bare insert", engine["per_step"] <= 2 * bare,
         f"{engine['per_step'] / bare:.2f}x (marginal {engine['marginal'] / bare:.2f}x)"),
        ("at least 4x DBOS-py's steps/s",
         None if dbos_best is None else c["steps_per_s"] >= 4 * dbos_best,
         "not measured" if dbos_best is None else (
             f"{c['steps_per_s'] / dbos_best:.2f}x the best DBOS mode here "
             f"({c['steps_per_s'] / NOTES['dbos_steps_per_s']:.2f}x the earlier 241; "
             f"workers alone {c2['steps_per_s'] / dbos_best:.2f}x)"
         )),
        ("resumption within 1 s", f["p95"] < 1000, f"p95 {f['p95']:.0f} ms"),
        ("the hash chain under 5% more a step", chain_extra < 0.05, f"{chain_extra:+.1%} per step"),
        ("a collection put at most 1.5x a step", put_ratio <= 1.5,
         f"{put_ratio:.2f}x (marginal {puts['put_marginal'] / puts['step_marginal']:.2f}x)"),
    ]
    print()
    for aim, met, detail in aims:
        verdict = "n/a" if met is None else ("MET" if met else "MISSED")
        print(f"aim: {aim.ljust(36)} {verdict.ljust(6)} {detail}")
    print(f"\nworker exit code {code}; worker log {log}")


if __name__ == "__main__":
    main()
