"""What a long history costs a run that wakes: prints figures; not a test.

    .venv/bin/python bench/scale_history.py                      # SQLite in a fresh folder
    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/sanoma_bench_history .venv/bin/python bench/scale_history.py
    ... --quick                 # rounds up to 1,000 only
    ... --sizes 1,1000          # these rounds only
    ... --profile FILE          # also cProfile the wakes at the last size into FILE (pstats)
    ... --model-rows            # replay model instances, as before replay read rows (to compare)

On PostgreSQL the database named is DROPPED and made again: give it one of its own.

(1) the wake of `loop` (a workflow that waits for a message each round, two recorded steps a round)
    after 1, 100, 1,000 and 10,000 rounds: a message sent, then the run advanced in this process
    (claim, load its history, replay it, read the message, record the next wait, suspend); the
    median of a few wakes, wall and this process's CPU (a loaded machine moves the wall time far
    more), and the history load alone (CPU);
(2) replay per recorded step, for runs of 10 to 20,000 steps: the wake's CPU less the wake's CPU
    at round 1, over the steps it replayed more;
(3) `relay`, the same loop calling `ctx.continue_as_new` every 100 rounds: its wake after 1, 1,000
    and 10,000 rounds (the history before its last continuation is kept but no longer replayed).
The long histories are written at once (`history_bench.loop.grow`: steps, continuations, messages
read and their ledger records, as the engine writes them); the wakes measured go through the engine.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sanoma_site.settings")
if not os.environ.get("DATABASE_URL"):
    os.environ["SANOMA_VAR_DIR"] = tempfile.mkdtemp(prefix="sanoma_bench_history_")
os.environ.setdefault("SANOMA_VAR_DIR", "/tmp/sanoma_bench_history")
os.environ["SANOMA_ROOT"] = str(REPO / "bench" / "bench_company")
os.environ["SANOMA_FAKES"] = "instance"
os.environ["SANOMA_APP_VERSION"] = "bench-history"
os.environ.setdefault("SANOMA_LOG_LEVEL", "WARNING")

import django  # noqa: E402
from engine_bench.common import bench_parser  # noqa: E402
from engine_bench.database import recreate_database  # noqa: E402

EXAMPLE_DB = "sanoma_bench_history"  # the database of --help's example
SQLITE_FIRST = "Without DATABASE_URL it runs on SQLite in a fresh folder. On PostgreSQL:"


def options_parser() -> argparse.ArgumentParser:
    parser = bench_parser("scale_history.py", __doc__, EXAMPLE_DB, before=SQLITE_FIRST)
    parser.add_argument("--quick", action="store_true", help="rounds 1, 100 and 1,000 only")
    parser.add_argument("--wakes", type=int, default=5, help="wakes measured at each size (median)")
    parser.add_argument("--sizes", help="the rounds to measure, comma-separated")
    parser.add_argument("--profile", metavar="FILE", help="cProfile the wakes at the last size into FILE")
    parser.add_argument("--model-rows", action="store_true",
                        help="replay Step model instances, as the engine did before it read rows (to compare)")
    return parser


# The options are read before the database is touched: --help (or a wrong option) drops nothing.
OPTIONS = options_parser().parse_args()
if os.environ.get("DATABASE_URL"):
    recreate_database(os.environ["DATABASE_URL"])
django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django_q.models import OrmQ  # noqa: E402
from history_bench import loop as loops  # noqa: E402

from runs import services  # noqa: E402
from runs.authoring import SanomaConfig  # noqa: E402
from runs.config.registry import set_config  # noqa: E402
from runs.config.resolution import ResolvedConfig, load_config, resolve_config  # noqa: E402
from runs.engine import history  # noqa: E402
from runs.engine.advance import advance  # noqa: E402
from runs.engine.history import load_steps  # noqa: E402
from runs.models import Run  # noqa: E402
from runs.testing import make_user  # noqa: E402

WORKER = "bench-history"


def bench_config() -> ResolvedConfig:
    base = load_config(REPO / "bench" / "bench_company", fakes="instance", app_version="bench-history")
    workflows = [wf for wf in base.workflows.values() if not wf.builtin]
    return resolve_config(
        SanomaConfig(app_name="bench", connectors=[c for c in base.connectors if c.vendor != "sanoma"],
                     workflows=[*workflows, *loops.WORKFLOWS]),
        fakes="instance", app_version="bench-history")


def started(config: ResolvedConfig, workflow: str, prefix: str, rounds: int, every: int = 0) -> str:
    """A run of `workflow` that recorded `rounds - 1` rounds and waits for its message of round `rounds`."""
    run_id = services.start(workflow=workflow, input={"every": every} if every else {}, started_by="bench",
                            run_id=f"{prefix}-{rounds}", config=config).id
    if rounds > 1:
        loops.grow(run_id, rounds - 1, app=config.app_name, every=every)
    outcome = advance(run_id, worker_id=WORKER, config=config)
    if outcome != "waiting":
        raise SystemExit(f"run {run_id} did not park on its message: {outcome}")
    return run_id


def wakes(config: ResolvedConfig, run_id: str, count: int,
          profile: cProfile.Profile | None = None) -> tuple[float, float]:
    """The median seconds of `count` wakes, each a message sent and the run advanced to its next
    wait: wall, and this process's CPU (what a loaded machine moves less)."""
    seconds, cpu = [], []
    for n in range(count):
        services.send_message(run_id=run_id, topic="tick", payload={"n": 1}, message_id=f"m{n}", by="bench")
        begun, begun_cpu = time.perf_counter(), time.process_time()
        if profile is not None:
            profile.enable()
        outcome = advance(run_id, worker_id=WORKER, config=config)
        if profile is not None:
            profile.disable()
        seconds.append(time.perf_counter() - begun)
        cpu.append(time.process_time() - begun_cpu)
        if outcome != "waiting":
            raise SystemExit(f"run {run_id} did not wait again after its message: {outcome}")
    OrmQ.objects.all().delete()  # no cluster runs here: advance() is called directly
    return statistics.median(seconds), statistics.median(cpu)


def loading(run_id: str, count: int = 5) -> float:
    """The median CPU seconds (this process) to load the run's history as an advance does."""
    run = Run.objects.get(pk=run_id)
    seconds = []
    for _ in range(count):
        begun = time.process_time()
        load_steps(run)
        seconds.append(time.process_time() - begun)
    return statistics.median(seconds)


def main() -> None:
    options = OPTIONS
    if options.model_rows:
        def load_models(run: Run) -> history.History:
            return history.current(run.input, {step.seq: step for step in run.steps.all()})

        history.load = load_models  # the comparison only
    call_command("migrate", verbosity=0)
    make_user("bench", perms=["runs.start_workflow"])
    config = bench_config()
    set_config(config)
    sizes: tuple[int, ...] = (1, 5, 50, 100, 500, 1000) if options.quick else (1, 5, 50, 100, 500, 1000, 5000, 10000)
    if options.sizes:
        sizes = tuple(int(size) for size in options.sizes.split(","))
    profile = cProfile.Profile() if options.profile else None
    print(f"database: {connection.vendor}; {options.wakes} wakes a size (median); loaded machine"
          f"{'; replaying Step model instances (as before)' if options.model_rows else ''}", flush=True)
    print("(1) loop: a message a round; wake = send, then advance to the next wait", flush=True)
    found: dict[int, float] = {}
    for rounds in sizes:
        run_id = started(config, "loop", "loop", rounds)
        wall, found[rounds] = wakes(config, run_id, options.wakes, profile if rounds == sizes[-1] else None)
        steps = 2 * (rounds - 1)
        print(f"  round {rounds:>6,} ({steps:>6,} steps replayed): wake {wall * 1000:8.2f} ms wall, "
              f"{found[rounds] * 1000:7.2f} ms CPU; history load {loading(run_id) * 1000:7.2f} ms CPU", flush=True)
    if len(sizes) < 2:
        return
    print("(2) replay per recorded step: (wake CPU at round r - at round 1) / steps more", flush=True)
    for rounds in sizes[1:]:
        steps = 2 * (rounds - 1)
        print(f"  {steps:>6,} steps: {(found[rounds] - found[1]) * 1e6 / steps:7.1f} µs a step", flush=True)
    if profile is not None:
        profile.dump_stats(options.profile)
        print(f"  profile of the wakes at round {sizes[-1]:,}: {options.profile}", flush=True)
    print("(3) relay: the same loop, continue_as_new every 100 rounds", flush=True)
    for rounds in (1, 1000) if options.quick else (1, 1000, 10000):
        run_id = started(config, "relay", "relay", rounds, every=100)
        wall, cpu = wakes(config, run_id, options.wakes)
        print(f"  round {rounds:>6,}: wake {wall * 1000:8.2f} ms wall, {cpu * 1000:7.2f} ms CPU; "
              f"history load {loading(run_id) * 1000:7.2f} ms CPU "
              f"({len(load_steps(Run.objects.get(pk=run_id)))} steps in its generation)", flush=True)


if __name__ == "__main__":
    main()
