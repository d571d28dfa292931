"""How the engine scales with workers, and a claim while a long read transaction is open. Prints figures; not a test.

Usage (PostgreSQL only; the database named is DROPPED and created afresh, so give it its own name):

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/sanoma_bench_scale .venv/bin/python bench/scale.py
    ... bench/scale.py --quick              # 200-run batches, a 20 s hold: about 80 s on 2 cores
    ... bench/scale.py --workers 1,2        # only these worker counts
    ... bench/scale.py --skip-workers       # only the claim under a long read (or --skip-claims)
    ... bench/scale.py --transactions       # (t) first; --only-transactions for (t) alone
    ... bench/scale.py --history --parked   # then bench/scale_history.py and bench/parked.py, each on
                                            # its own database <name>_history / <name>_parked
    ... --parked-args "--sizes 0,10000"     # their own arguments (with --quick: history --quick,
                                            # parked --sizes 0,10000 --reps 5)

It measures, in one run:
  (s) steps/s of `runs` 10-step runs queued before the worker started, drained by a `manage.py
      worker` with SANOMA_WORKERS = 1, 2, 4 and 8 worker processes (from the first checkpoint to the
      last run's end, database timestamps); and the CPU spent per step, read from /proc between the
      worker's ready line and the last run's end: the worker processes' (the n busiest processes of
      the worker's process group: each step is run by one of them), the whole group's (with
      django-q's sentinel, pusher and monitor, the sweep and the supervisor), and the PostgreSQL
      backends' serving this database (those alive at the end)
  (l) a claim's p50/p95 (`runs.engine.advance.claim`, timed inside the engine's own `advance` of runs
      this process starts) while 2 worker processes drain a backlog of runs alongside: first with
      nothing else open, then while another connection holds a REPEATABLE READ transaction open
      (an admin report's query, then idle in its transaction) for `--hold` seconds (60); beside
      each claim, the read of the worker's broker dequeue, and "a claim plus its turn's dequeue
      read" (the two summed per turn, then the p95 of the sums); dead rows left in the run, step and
      task tables. Aim: a claim's p95 under 10 ms while the long transaction is open.
  (t) with --transactions: the transactions of a worker's own machinery (2 processes), idle for
      --idle seconds (30), then busy with 200 10-step runs started while it is up (100 --quick): by
      `xact_commit`, and from the server's statement log, by kind (engine_bench/machinery.py).
The config root is bench/bench_company/, as for bench/engine.py. On a loaded machine (the workers and
PostgreSQL share 2 cores here) more workers than cores measure contention, not the engine.
The helpers both scripts use are tested in bench/engine_bench/tests/ (not under pytest.ini's
testpaths: run them by path, `.venv/bin/pytest bench/engine_bench/tests`).
"""
from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

from engine_bench.common import REPO, bench_database_url, bench_parser
from engine_bench.database import with_db
from engine_bench.figures import Aim, aim_lines, p95
from engine_bench.setup import prepare

OTHERS = {"history": "scale_history.py", "parked": "parked.py"}  # the history and parked-runs benches
QUICK_ARGS = {"history": "--quick", "parked": "--sizes 0,10000 --reps 5"}
EXAMPLE_DB = "sanoma_bench_scale"  # the database of --help's example and of the refusal without DATABASE_URL
ALSO_MADE = ("with --history, <name>_history (bench/scale_history.py's); with --parked, <name>_parked "
             "(bench/parked.py's): each dropped and made afresh by its script")
NOTE = "With --quick: about 80 s on 2 cores (with --history or --parked, their time too)."
STARTING_ENV = dict(os.environ)  # before the bench's own settings: the other scripts make theirs


def run_other(script: str, url: str, suffix: str, args: str = "", folder: Path = REPO / "bench") -> int:
    """Another bench script of this folder on its own database <name>_<suffix> (which it drops and
    makes again), with `args` (split as a shell would) and the environment scale.py started with;
    its output passed through. 0 when the script is not here."""
    path = folder / script
    if not path.exists():
        print(f"\n{script}: not here (yet); skipped")
        return 0
    name = f"{urlparse(url).path.lstrip('/')}_{suffix}"
    print(f"\n--- bench/{script} {args} on {name} ---".replace("  ", " "), flush=True)
    return subprocess.run([sys.executable, str(path), *shlex.split(args)],
                          env={**STARTING_ENV, "DATABASE_URL": with_db(url, name)}, cwd=REPO, check=False).returncode


def main() -> None:
    parser = bench_parser("scale.py", __doc__, EXAMPLE_DB, ALSO_MADE, NOTE)
    parser.add_argument("--quick", action="store_true", help="smaller batches, a 20 s hold")
    parser.add_argument("--workers", default="1,2,4,8", help="worker counts for (s), comma-separated")
    parser.add_argument("--runs", type=int, help="10-step runs per worker count (default 500; --quick 200)")
    parser.add_argument("--hold", type=float, help="seconds the read transaction stays open (default 60)")
    parser.add_argument("--claim-workers", type=int, default=2, help="worker processes alongside (l)")
    parser.add_argument("--skip-workers", action="store_true", help="without (s)")
    parser.add_argument("--skip-claims", action="store_true", help="without (l)")
    parser.add_argument("--transactions", action="store_true",
                        help="(t) first: an idle and a busy worker's transactions, by kind")
    parser.add_argument("--only-transactions", action="store_true", help="(t) alone")
    parser.add_argument("--idle", type=float, default=30.0, help="seconds of the idle window of (t)")
    for other, script in OTHERS.items():
        parser.add_argument(f"--{other}", action="store_true", help=f"then run bench/{script} (if present)")
        parser.add_argument(f"--{other}-args", default=None, metavar="ARGS",
                            help=f"its arguments, one string (default none; --quick: {QUICK_ARGS[other]!r})")
    args = parser.parse_args()
    # A SIGTERM (timeout, kill) unwinds like an error, so no worker process started here is left behind.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    url = bench_database_url("scale.py", EXAMPLE_DB, ALSO_MADE)
    counts = [int(n) for n in args.workers.split(",") if n.strip()]
    runs = args.runs or (200 if args.quick else 500)
    hold = args.hold or (20.0 if args.quick else 60.0)
    baseline = min(hold, 20.0)

    config, env, var = prepare(url)
    print(f"bench database {urlparse(url).path.lstrip('/')}; python {sys.version.split()[0]}; "
          f"{os.cpu_count()} cores", flush=True)
    if args.transactions or args.only_transactions:
        from engine_bench.machinery import report, worker_transactions

        t_runs = 100 if args.quick else 200
        print(f"(t) a worker's own transactions: {args.idle:.0f} s idle, then {t_runs} runs x 10 steps:", flush=True)
        quiet, busy, steps = worker_transactions(config, env, var, url, idle=args.idle, runs=t_runs)
        print("\n".join(report(quiet, busy, steps, t_runs)), flush=True)
        if args.only_transactions:
            return
    series = []
    if not args.skip_workers:
        from engine_bench.scaling import worker_series

        print(f"(s) {runs} runs x 10 steps queued first, then drained by 1 worker process and more:", flush=True)
        series = worker_series(config, env, var, counts, runs, 10)
    phases = None
    if not args.skip_claims:
        from engine_bench.long_read import claim_under_long_read

        print(f"(l) claims with {args.claim_workers} worker processes alongside, {baseline:.0f} s without and "
              f"{hold:.0f} s with a read transaction open:", flush=True)
        phases = claim_under_long_read(config, env, var, url, hold=hold, baseline=baseline,
                                       workers=args.claim_workers)

    if series:
        one = series[0].steps_per_s
        print("\nworkers | steps/s | x the first | CPU/step: workers | worker group | PostgreSQL backends")
        for d in series:
            print(f"{d.workers:7d} | {d.steps_per_s:7,.0f} | {d.steps_per_s / one:10.2f}x | "
                  f"{d.worker_cpu_per_step * 1000:14.2f} ms | {d.group_cpu_per_step * 1000:9.2f} ms | "
                  f"{d.backends_cpu_per_step * 1000:16.2f} ms")
    if phases is not None:
        unheld, held = phases
        print()
        print("\n".join(aim_lines([Aim(
            f"a claim's p95 with a {hold:.0f} s read transaction open", p95(held.claims) * 1000, 10, True,
            f"{p95(held.claims) * 1000:.2f} ms (without it {p95(unheld.claims) * 1000:.2f} ms; "
            f"{len(held.claims)} claims)", " ms")])))
    print(f"\nworker logs in {var}")
    failed = []
    for other, script in OTHERS.items():
        given = getattr(args, f"{other}_args")
        extra = given if given is not None else (QUICK_ARGS[other] if args.quick else "")
        if getattr(args, other) and run_other(script, url, other, extra) != 0:
            failed.append(script)
    if failed:
        raise SystemExit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
