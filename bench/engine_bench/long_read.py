"""bench/scale.py's claim under a long read: how long the engine's claim of a run takes (p50/p95)
while a worker drains runs alongside, first with nothing else open, then while another connection
holds a read transaction open (an admin report: REPEATABLE READ, a report query, then idle in its
transaction) for 60 s, so no row version written meanwhile can be vacuumed away.

The claims timed are this process's own: it starts runs of a workflow of its own (`claimed`, one
step; no worker owns its version, so the workers leave those runs alone), and advances each with
`runs.engine.advance.advance`, timing the `claim` inside it. Beside each claim it times the read of
the worker's broker dequeue (the task queue's `key = cluster AND lock < now` query, which scans the
dead task rows the open transaction keeps). Meanwhile it keeps a backlog of `steps` runs queued
for the worker, so runs are started, claimed, checkpointed and ended throughout."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from engine_bench.common import VERSION
from engine_bench.figures import p95, percentile
from engine_bench.worker import start_worker


class ClaimedInput(BaseModel):
    n: int = Field(default=1, ge=0, le=100)


def claimed(ctx: Any, input: ClaimedInput) -> dict[str, int]:
    for i in range(input.n):
        ctx.bench.step.do({"n": i})
    return {"steps": input.n}


def claim_config(config: Any, var: Path) -> Any:
    """The bench company with one more workflow, `claimed`: its version is this config's alone."""
    from bench_company.vendor import DO

    from runs.authoring import define_workflow
    from runs.config.resolution import SanomaConfig, resolve_config

    workflow = define_workflow(name="claimed", input=ClaimedInput, uses=[DO], run=claimed)
    return resolve_config(
        SanomaConfig(app_name="bench", connectors=[c for c in config.connectors if c.vendor != "sanoma"],
                     workflows=[*(wf for wf in config.workflows.values() if not wf.builtin), workflow]),
        fakes="instance", fake_dir=var / "fakes", app_version=VERSION)


@dataclass
class Phase:
    """One phase's timings (seconds) and what went on meanwhile."""

    name: str
    claims: list[float]
    dequeues: list[float]
    fed: int  # runs started for the worker during the phase
    dead_tuples: dict[str, int]  # at the phase's end: table -> n_dead_tup

    def line(self) -> str:
        c, d = self.claims, self.dequeues
        # Each claim plus the dequeue read timed just before it (the same turn): the two as one turn
        # pays them, the p95 of the sums (not the sum of the two p95s).
        summed = [a + b for a, b in zip(c, d, strict=True)]
        dead = ", ".join(f"{table} {n:,}" for table, n in self.dead_tuples.items())
        return (f"{self.name}: {len(c)} claims, p50 {percentile(c, 0.5) * 1000:.2f} ms, p95 {p95(c) * 1000:.2f} ms, "
                f"max {max(c) * 1000:.1f} ms; the broker's dequeue read p95 {p95(d) * 1000:.2f} ms; a claim plus "
                f"its turn's dequeue read, p95 {p95(summed) * 1000:.2f} ms; {self.fed} runs fed to the worker; "
                f"dead rows at the end: {dead}")


def dead_tuples() -> dict[str, int]:
    """Dead row versions of the run, step and task tables (PostgreSQL's statistics; {} elsewhere)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return {}
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT relname, n_dead_tup FROM pg_stat_user_tables "
                       "WHERE relname IN ('runs_run', 'runs_step', 'django_q_ormq') ORDER BY relname")
        return {name: int(n) for name, n in cursor.fetchall()}


def run_phase(name: str, seconds: float, mine: Any, feed: Any, prefix: str, backlog: int) -> Phase:
    """Claim runs of `claimed` one after another for `seconds`, keeping `backlog` runs queued for
    the worker (10-step runs of `steps` on `feed`, the worker's config)."""
    from django.utils import timezone
    from django_q.conf import Conf
    from django_q.models import OrmQ

    from runs import services
    from runs.engine import advance as advancing
    from runs.models import Run, RunStatus

    claims: list[float] = []
    dequeues: list[float] = []
    original = advancing.claim

    def timed_claim(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            claims.append(time.perf_counter() - started)

    fed = n = 0
    ends = time.monotonic() + seconds
    advancing.claim = timed_claim  # advance() looks `claim` up in its module
    try:
        while time.monotonic() < ends:
            if n % 10 == 0 and Run.objects.filter(id__startswith=prefix, status=RunStatus.QUEUED).count() < backlog:
                for _ in range(20):
                    services.start(workflow="steps", input={"n": 10}, started_by="bench", run_id=f"{prefix}{fed}",
                                   config=feed)
                    fed += 1
            run_id = services.start(workflow="claimed", input={"n": 1}, started_by="bench",
                                    run_id=f"{prefix}mine-{n}", config=mine).id
            started = time.perf_counter()
            list(OrmQ.objects.using(Conf.ORM).filter(key=Conf.CLUSTER_NAME, lock__lt=timezone.now())[0:Conf.BULK])
            dequeues.append(time.perf_counter() - started)
            outcome = advancing.advance(run_id, worker_id="bench-claimer", config=mine)
            if outcome != "finished":
                raise SystemExit(f"{name}: run {run_id} did not finish in one advance: {outcome}")
            n += 1
    finally:
        advancing.claim = original
    if len(claims) != n:
        raise SystemExit(f"{name}: {len(claims)} claims timed for {n} runs")
    return Phase(name=name, claims=claims, dequeues=dequeues, fed=fed, dead_tuples=dead_tuples())


def open_report(url: str) -> Any:
    """Another connection: REPEATABLE READ, an admin report's query, then left idle in its
    transaction (its snapshot held: PostgreSQL's xmin horizon cannot pass it)."""
    import psycopg

    conn = psycopg.connect(url)
    conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    conn.execute("SET idle_in_transaction_session_timeout = 0")
    conn.execute("SELECT status, count(*), max(updated_at) FROM runs_run GROUP BY status").fetchall()
    conn.execute("SELECT count(*) FROM runs_step").fetchone()
    pid = conn.info.backend_pid
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT backend_xmin IS NOT NULL, state FROM pg_stat_activity WHERE pid = %s", [pid])
        holds, state = cursor.fetchone()
    if not holds or state != "idle in transaction":
        raise SystemExit(f"the report's transaction does not hold a snapshot ({holds}, {state})")
    return conn


def claim_under_long_read(config: Any, env: dict[str, str], var: Path, url: str, *, hold: float, baseline: float,
                          workers: int, backlog: int = 200) -> tuple[Phase, Phase]:
    """The baseline phase, then the phase with the report's transaction open for `hold` seconds."""
    mine = claim_config(config, var)
    worker = start_worker(env, var / "worker-claims.log", workers)
    try:
        quiet = run_phase("no long transaction", baseline, mine, config, "lr-a-", backlog)
        print("  " + quiet.line(), flush=True)
        report = open_report(url)
        try:
            held = run_phase(f"a {hold:.0f} s read transaction open", hold, mine, config, "lr-b-", backlog)
        finally:
            report.rollback()
            report.close()
        print("  " + held.line(), flush=True)
        worker.terminate(within=60)
    except BaseException:
        print(worker.describe())
        raise
    finally:
        worker.cleanup()
    return quiet, held
