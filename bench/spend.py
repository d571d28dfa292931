"""Spend limits under load: `DATABASE_URL=postgresql://postgres@127.0.0.1:5432/sanoma_spend_bench
.venv/bin/python bench/spend.py` (that database is dropped and made again).

1. The cost of counting: the sums alone (`runs.spend.sums.spent`, the one query a decision adds
   beside the lock and the reservation), then one-call refund runs advanced one after the other, with a month of earlier
   money calls in the spend table (`--rows`, 0 and then that many), under a budget rule that reads
   `context.spent.today.operation`: the advance's p50 and p95 (wall, ms), against the same runs
   under a policy that reads no sums (the money is counted all the same). Twenty runs first warm up.
2. The race: `--threads` threads, each advancing its share of `--refunds` refunds of 150.00 EUR,
   all released at once, against a budget of 1,000.00 EUR a day: how many were made and held, the
   money that moved, and the wall time. Six fit; the rest must be held.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from datetime import date, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sanoma_site.settings")
os.environ.setdefault("SANOMA_VAR_DIR", "/tmp/var_spend_bench")
from engine_bench.common import bench_database_url, bench_parser  # noqa: E402
from engine_bench.database import recreate_database  # noqa: E402

EXAMPLE_DB = "sanoma_spend_bench"  # the database of --help's example and of the refusal without DATABASE_URL


def options_parser() -> argparse.ArgumentParser:
    parser = bench_parser("spend.py", __doc__, EXAMPLE_DB)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--refunds", type=int, default=40)
    parser.add_argument("--threads", type=int, default=8)
    return parser


# The options are read before the database is touched: --help (or a wrong option) drops nothing.
OPTIONS = options_parser().parse_args()
recreate_database(bench_database_url("spend.py", EXAMPLE_DB))

import django  # noqa: E402

django.setup()
from django.core.management import call_command  # noqa: E402
from django.db import connections  # noqa: E402

from runs import services  # noqa: E402
from runs.config.registry import set_config  # noqa: E402
from runs.config.resolution import SanomaConfig  # noqa: E402
from runs.engine import clock  # noqa: E402
from runs.engine.advance import advance  # noqa: E402
from runs.models import Run  # noqa: E402
from runs.policies import allow, define_policy  # noqa: E402
from runs.spend.models import SpendEntry, SpendState  # noqa: E402
from runs.spend.sums import day_of, month_of, spent  # noqa: E402
from runs.spend.tests.support import BUDGET, REFUND, budget_policy, pay  # noqa: E402
from runs.testing import make_user, resolve_on_fakes  # noqa: E402


def config_with(policy):
    config = resolve_on_fakes(SanomaConfig(connectors=[pay], workflows=[REFUND], policy=policy))
    set_config(config)
    return config


def seed(rows: int) -> None:
    """`rows` earlier money calls this month, of other runs, none of them today."""
    now = clock.now()
    today, month = day_of(now), month_of(now)
    days = [d for d in (month + timedelta(days=n) for n in range(28)) if d != today] or [date(2000, 1, 1)]
    SpendEntry.objects.bulk_create([
        SpendEntry(run_id=f"earlier-{n}", seq=1, op="pay.order.refund", vendor="pay", workflow="refund",
                   starter=f"p{n % 50}", currency="EUR", cents=100, day=days[n % len(days)], month=month,
                   state=SpendState.SPENT, decided_at=now, settled_at=now) for n in range(rows)], batch_size=5000)


def timed_runs(config, count: int) -> list[float]:
    took = []
    for n in range(count):
        run = services.start(workflow="refund", input={"order_id": str(n), "amount_cents": 1}, started_by="alice",
                             config=config)
        started = time.perf_counter()
        advance(run.id, worker_id="bench", config=config)
        took.append((time.perf_counter() - started) * 1000)
    return took


def figures(took: list[float]) -> str:
    ordered = sorted(took)
    return f"p50 {statistics.median(ordered):.2f} ms, p95 {ordered[int(len(ordered) * 0.95) - 1]:.2f} ms"


def race(config, refunds: int, threads: int) -> None:
    runs = [services.start(workflow="refund", input={"order_id": f"r{n}", "amount_cents": 15_000},
                           started_by="alice", config=config).id for n in range(refunds)]
    gate = threading.Barrier(threads)
    shares = [runs[n::threads] for n in range(threads)]

    def work(mine: list[str], n: int) -> None:
        try:
            gate.wait()
            for run_id in mine:
                advance(run_id, worker_id=f"bench-{n}", config=config)
        finally:
            connections.close_all()

    started = time.perf_counter()
    workers = [threading.Thread(target=work, args=(share, n)) for n, share in enumerate(shares)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    wall = time.perf_counter() - started
    statuses = list(Run.objects.filter(pk__in=runs).values_list("status", flat=True))
    moved = sum(r["amount_cents"] for r in config.fakes["pay"].state["refunds"])
    print(f"race: {refunds} refunds of 150.00 EUR on {threads} threads against {BUDGET / 100:,.2f} EUR: "
          f"{statuses.count('finished')} made, {statuses.count('waiting')} held, {moved / 100:,.2f} EUR moved "
          f"(budget kept: {moved <= BUDGET}), {wall:.2f} s")


def main() -> None:
    args = OPTIONS
    call_command("migrate", verbosity=0)
    make_user("alice", perms=["runs.start_workflow"])
    folder = Path(tempfile.mkdtemp())
    budget = budget_policy(folder / "budget", rules=f"""
@id("all") permit(principal, action, resource);
@id("budget") @approve("alice") @budget("{BUDGET * 1000}")
forbid(principal, action == Action::"pay.order.refund", resource)
when {{ context.spent.today.operation + context.amount > {BUDGET * 1000} }};
""")
    plain = define_policy(lambda call: allow(), version="v1")
    timed_runs(config_with(plain), 20)  # warm up: imports, the first connections, Cedar's first sets
    for rows in (0, args.rows):
        SpendEntry.objects.all().delete()
        seed(rows)
        took = []
        for _ in range(args.runs):
            started = time.perf_counter()
            spent(op="pay.order.refund", vendor="pay", workflow="refund", starter="alice", currency="EUR",
                  now=clock.now())
            took.append((time.perf_counter() - started) * 1000)
        print(f"the sums (one query) with {rows:,} rows this month: {figures(took)}")
        for name, policy in (("reads no sums", plain), ("budget rule", budget)):
            took = timed_runs(config_with(policy), args.runs)
            print(f"{args.runs} one-refund runs, {rows:,} rows this month, {name}: {figures(took)}")
    SpendEntry.objects.all().delete()
    race(config_with(budget_policy(folder / "race")), args.refunds, args.threads)


if __name__ == "__main__":
    main()
