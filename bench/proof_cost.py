"""What the proof costs: `.venv/bin/python bench/proof_cost.py` (SQLite in a fresh folder), or on
PostgreSQL `DATABASE_URL=postgresql://postgres@127.0.0.1:5432/sanoma_bench_proof` (that database
is dropped and made again).

Parks 1,000 runs of `parked` with 1 call before their wait (2 recorded steps each) and 1,000 with
10 calls (11 steps), through the engine, then proves each set against the same code as a deploy
does (`prove_runs` over `parked_runs`: the records read in batches, each run replayed dry). Prints,
for each set, the time per parked run (reads and replay, best of three rounds), the queries
made, and the time per replayed step; and the marginal cost of a step (the difference between
the two sets over the steps they differ by).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sanoma_site.settings")
if not os.environ.get("DATABASE_URL"):
    os.environ["SANOMA_VAR_DIR"] = tempfile.mkdtemp(prefix="sanoma_bench_proof_")
os.environ.setdefault("SANOMA_VAR_DIR", "/tmp/sanoma_bench_proof")
os.environ["SANOMA_ROOT"] = str(REPO / "bench" / "bench_company")
os.environ["SANOMA_FAKES"] = "instance"
os.environ["SANOMA_APP_VERSION"] = "bench-proof"

import django  # noqa: E402
from engine_bench.common import bench_parser  # noqa: E402
from engine_bench.database import recreate_database  # noqa: E402

EXAMPLE_DB = "sanoma_bench_proof"  # the database of --help's example
SQLITE_FIRST = "Without DATABASE_URL it runs on SQLite in a fresh folder. On PostgreSQL:"


def options_parser() -> argparse.ArgumentParser:
    parser = bench_parser("proof_cost.py", __doc__, EXAMPLE_DB, before=SQLITE_FIRST)
    parser.add_argument("--runs", type=int, default=1000, help="parked runs in each set (default 1000)")
    return parser


# The options are read before the database is touched: --help (or a wrong option) drops nothing.
OPTIONS = options_parser().parse_args()
if os.environ.get("DATABASE_URL"):
    recreate_database(os.environ["DATABASE_URL"])
django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from runs import services  # noqa: E402
from runs.config.registry import get_config  # noqa: E402
from runs.engine.drain import drain  # noqa: E402
from runs.engine.proof import parked_runs, prove_runs  # noqa: E402
from runs.models import Run, RunStatus  # noqa: E402
from runs.testing import make_user  # noqa: E402

ROUNDS = 3


def park(config, count: int, calls: int) -> list[Run]:
    """`count` runs of `parked` with `calls` calls each, advanced by the engine until they wait."""
    ids = [services.start(workflow="parked", input={"n": calls}, started_by="bench", config=config).id
           for _ in range(count)]
    drain(config)
    runs = list(Run.objects.filter(pk__in=ids))
    waiting = sum(1 for run in runs if run.status == RunStatus.WAITING and run.waiting_for == "message")
    if waiting != count:
        raise SystemExit(f"only {waiting} of {count} runs parked on their message")
    return runs


def prove_set(config, runs: list[Run]) -> tuple[float, int, int]:
    """Best-of-ROUNDS seconds to prove the runs (from the query that finds them), queries, steps replayed."""
    ids = [run.pk for run in runs]
    times = []
    queries = steps = 0
    for _ in range(ROUNDS):
        started = time.perf_counter()
        with CaptureQueriesContext(connection) as captured:
            proofs = prove_runs(config=config, runs=parked_runs().filter(pk__in=ids))
        times.append(time.perf_counter() - started)
        queries = len(captured)
        if any(not p.migrates for p in proofs) or len(proofs) != len(ids):
            raise SystemExit("a parked run did not prove on its own code")
        steps = sum(p.steps_replayed for p in proofs)
    return min(times), queries, steps


def main() -> None:
    options = OPTIONS
    call_command("migrate", verbosity=0)
    make_user("bench", perms=["runs.start_workflow"])
    config = get_config()
    print(f"database: {connection.vendor}; {options.runs} parked runs a set; best of {ROUNDS} rounds", flush=True)
    results = {}
    for calls in (1, 10):
        runs = park(config, options.runs, calls)
        seconds, queries, steps = prove_set(config, runs)
        results[calls] = (seconds, steps)
        print(f"{calls:>2} call(s) + wait ({steps // len(runs)} steps a run): {seconds * 1000 / len(runs):.3f} ms a "
              f"parked run, {seconds * 1e6 / steps:.1f} µs a replayed step, {queries} queries "
              f"({seconds:.2f} s for {len(runs)})", flush=True)
    (short, short_steps), (long, long_steps) = results[1], results[10]
    marginal = (long - short) / (long_steps - short_steps)
    print(f"marginal replayed step: {marginal * 1e6:.1f} µs; fixed cost a run: "
          f"{(short - marginal * short_steps) * 1000 / options.runs:.3f} ms", flush=True)


if __name__ == "__main__":
    main()
