"""What a checkpointed step costs the engine's process, counted in machine instructions under
callgrind. Prints figures; not a test.

CPU seconds on a shared machine move with whatever else runs; an instruction count does not. This
advances runs of ten calls and runs of none (`bench/engine.py` (b)'s workflow, on an in-memory
fake, in this process) in rounds, alternating, with callgrind
counting only while they advance (starting them is not counted), and prints the instructions per
step: a ten-call run's count over its ten steps, and the marginal step (ten-call runs less the
runs of none, over ten). The database server is another process and is not counted. Metrics
are off unless `--metrics`: their values are written to their files once a second, so with them
on the count grows as the machine slows down (a loaded machine's steps take longer). With
`--profile FILE` it also writes a cProfile of 1,000 steps (without callgrind) to FILE.

Usage (PostgreSQL only; the database named is DROPPED and created afresh):

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/sanoma_bench_steps \\
        .venv/bin/python bench/step_instructions.py

It starts itself again under `valgrind --tool=callgrind` as `bench/telemetry_instructions.py`
does. A few minutes: the setup runs at valgrind's speed.
"""
from __future__ import annotations

import cProfile
import os
import statistics
import time

from telemetry_instructions import UNDER, counted, marks, rerun_under_callgrind

STEPS = 10


def measure(rounds: int, runs: int, folder: str, metrics: bool) -> None:
    from engine_bench.in_process import advance_all, start_runs
    from engine_bench.setup import prepare
    from telemetry import set_mode

    config, _env, _var = prepare(os.environ["DATABASE_URL"])
    set_mode("metrics" if metrics else "none", "")
    advance_all(config, start_runs(config, "warm-f", runs, STEPS))
    advance_all(config, start_runs(config, "warm-e", runs, 0))
    lib = marks(folder)
    sides = ("full", "empty")
    for r in range(rounds):
        for side in sides if r % 2 == 0 else sides[::-1]:
            ids = start_runs(config, f"i{r}-{side}", runs, STEPS if side == "full" else 0)
            lib.marks_start()
            advance_all(config, ids)
            lib.marks_stop(f"{side}-{r}".encode())
    dumps = counted(folder)
    per_step = [dumps[f"full-{r}"] / (runs * STEPS) for r in range(rounds)]
    marginal = [(dumps[f"full-{r}"] - dumps[f"empty-{r}"]) / (runs * STEPS) for r in range(rounds)]
    per_run = [dumps[f"empty-{r}"] / runs for r in range(rounds)]
    print(f"{runs} runs of {STEPS} calls and {runs} of none a round, {rounds} rounds alternating, metrics "
          f"{'on' if metrics else 'off'}; instructions in this process:")
    print(f"  per step (10-call runs) median {statistics.median(per_step):,.0f} "
          f"(rounds: {', '.join(f'{v:,.0f}' for v in per_step)})")
    print(f"  marginal step           median {statistics.median(marginal):,.0f} "
          f"(rounds: {', '.join(f'{v:,.0f}' for v in marginal)})")
    print(f"  a run of no calls       median {statistics.median(per_run):,.0f} (claim, load, end)")


def profile(path: str) -> None:
    from engine_bench.in_process import advance_all, start_runs
    from engine_bench.setup import prepare
    from telemetry import set_mode

    config, _env, _var = prepare(os.environ["DATABASE_URL"])
    set_mode("metrics", "")
    advance_all(config, start_runs(config, "warm", 20, STEPS))
    ids = start_runs(config, "p", 100, STEPS)
    profiler = cProfile.Profile(time.process_time)  # CPU, not the waits on the database
    profiler.runcall(advance_all, config, ids)
    profiler.dump_stats(path)
    print(f"cProfile of {len(ids) * STEPS} steps written to {path}")


def main() -> None:
    from engine_bench.common import bench_database_url, bench_parser

    parser = bench_parser("step_instructions.py", __doc__, "sanoma_bench_steps")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--profile", metavar="FILE", help="only a cProfile of 1,000 steps, into FILE")
    parser.add_argument("--metrics", action="store_true", help="metrics on (counts then grow with the load)")
    args = parser.parse_args()
    bench_database_url("step_instructions.py", "sanoma_bench_steps")
    if args.profile:
        return profile(args.profile)
    rerun_under_callgrind()
    measure(args.rounds, args.runs, os.environ[UNDER], args.metrics)
    return None


if __name__ == "__main__":
    main()
