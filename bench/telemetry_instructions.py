"""What metrics cost a step, counted in machine instructions under callgrind. Prints figures; not a test.

CPU time on a shared machine moves with whatever else runs (caches, the other core's load), so the
metrics' few percent drown in it; an instruction count does not: callgrind counts the same for the
same work whatever the machine is doing. This runs `bench/telemetry.py`'s step (runs of ten calls
on an in-memory fake, advanced in this process) with metrics off and on, rounds alternating, and
counts this process's instructions while the runs advance (starting them is not counted), and
then what the metrics fire for a call step on their own. A whole step's count moves a few percent
from round to round even with nothing changed (`--same` runs both modes with metrics off to show
it), more than the metrics cost, so the aim is held to what they fire, counted on its own. The
database server is another process: its work is not counted, which is what "the cost per step in
the engine's process" means.

Usage (PostgreSQL only; the database named is DROPPED and created afresh):

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/sanoma_bench_instr \\
        .venv/bin/python bench/telemetry_instructions.py

It starts itself again under `valgrind --tool=callgrind` with counting off, and turns counting on
only around each round's advance, through callgrind's client requests (a few lines of C compiled
with the machine's gcc and valgrind's header, called with ctypes), dumping each round's count to
its own file. A few minutes: the setup runs at valgrind's speed.
"""
from __future__ import annotations

import ctypes
import glob
import os
import re
import statistics
import subprocess
import sys
import tempfile

UNDER = "SANOMA_BENCH_UNDER_CALLGRIND"
MODES = ("none", "metrics")


MARKS_C = r"""
#include <valgrind/callgrind.h>
void marks_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void marks_stop(const char *name) { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS_AT(name); }
"""


def marks(folder: str) -> ctypes.CDLL:
    """callgrind's start and stop-and-dump client requests, as functions Python can call."""
    source, library = os.path.join(folder, "marks.c"), os.path.join(folder, "marks.so")
    with open(source, "w") as f:
        f.write(MARKS_C)
    subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-o", library, source], check=True)
    return ctypes.CDLL(library)


def counted(folder: str) -> dict[str, int]:
    """Each dump's instructions, by the name it was dumped at."""
    found: dict[str, int] = {}
    for path in glob.glob(os.path.join(folder, "cg.out*")):
        with open(path) as f:
            text = f.read()
        name = re.search(r"Client Request: (\S+)", text)
        total = re.search(r"^totals:\s*(\d+)", text, re.MULTILINE)
        if name and total:
            found[name.group(1)] = int(total.group(1))
    return found


FIRED = 2000  # call steps' worth of metrics, counted on their own


def fire_call_steps(times: int) -> None:
    """What metrics fire for `times` call steps: the step, the decision, the attempt timed, the call
    settled; written every ten steps, as the end of a ten-step segment writes them."""
    from runs.telemetry import metrics

    op = type("Op", (), {"vendor": "bench", "id": "bench.step.do", "effect": "read"})()
    for i in range(times):
        if i % 10 == 0:
            metrics.flush()
        metrics.step_written("steps", "call")
        metrics.policy_decided("allow")
        metrics.call_attempted(op, 0.001)
        metrics.call_settled(op, "ok")


def measure(rounds: int, runs: int, steps: int, folder: str, *, same: bool = False) -> None:
    from engine_bench.in_process import advance_all, start_runs
    from engine_bench.setup import prepare
    from telemetry import set_mode

    config, _env, _var = prepare(os.environ["DATABASE_URL"])
    set_mode("metrics", "")
    advance_all(config, start_runs(config, "warm-m", runs, steps))  # every label made, files opened
    set_mode("none", "")
    advance_all(config, start_runs(config, "warm-n", runs, steps))
    lib = marks(folder)
    for r in range(rounds):
        for mode in MODES if r % 2 == 0 else MODES[::-1]:
            set_mode("none" if same else mode, "")
            ids = start_runs(config, f"i{r}-{mode}", runs, steps)
            lib.marks_start()
            advance_all(config, ids)
            lib.marks_stop(f"{mode}-{r}".encode())
    set_mode("metrics", "")
    fire_call_steps(100)  # every label made
    lib.marks_start()
    fire_call_steps(FIRED)
    lib.marks_stop(b"fired")
    dumps = counted(folder)
    per_step = {mode: [dumps[f"{mode}-{r}"] / (runs * steps) for r in range(rounds)] for mode in MODES}
    print(f"{runs} runs x {steps} steps a mode a round, {rounds} rounds alternating; instructions per step "
          "in this process:")
    for mode in MODES:
        print(f"  {mode:8} median {statistics.median(per_step[mode]):,.0f}  "
              f"(rounds: {', '.join(f'{v:,.0f}' for v in per_step[mode])})")
    fired = dumps["fired"] / FIRED
    print(f"what metrics fire for one call step on its own (written every ten steps, as a segment's end "
          f"writes them): {fired:,.0f} instructions, {fired / statistics.median(per_step['none']):.2%} of a step")
    ratio = statistics.median(m / n for m, n in zip(per_step["metrics"], per_step["none"], strict=True)) - 1
    spread = [m / n - 1 for m, n in zip(per_step["metrics"], per_step["none"], strict=True)]
    print(f"whole step, metrics over none: median {ratio:+.2%} (rounds {min(spread):+.1%} to {max(spread):+.1%}"
          f"{'; both modes with metrics off: the noise alone' if same else ''})")

    # A whole step's count moves a few percent from round to round with nothing changed (run `--same`),
    # more than the metrics cost; what they fire, counted on its own, is the figure the aim is held to.
    share = fired / statistics.median(per_step["none"])
    verdict = "MET" if share < 0.03 else "MISSED"
    print(f"\naim: metrics on, tracing off, under 3 % of a step  {verdict}  {share:.2%} "
          "(what they fire for a call step)")


def main() -> None:
    from engine_bench.common import bench_database_url, bench_parser

    parser = bench_parser("telemetry_instructions.py", __doc__, "sanoma_bench_instr")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--same", action="store_true",
                        help="both modes with metrics off: the whole step's round-to-round noise, nothing else")
    args = parser.parse_args()
    bench_database_url("telemetry_instructions.py", "sanoma_bench_instr")
    rerun_under_callgrind()
    measure(args.rounds, args.runs, 10, os.environ[UNDER], same=args.same)


def rerun_under_callgrind() -> None:
    """Outside callgrind: run this same command again under it (counting off until the marks turn it
    on) and exit with its status. Under it (UNDER set): return, to measure."""
    if os.environ.get(UNDER) is not None:
        return
    with tempfile.TemporaryDirectory(prefix="sanoma-callgrind-") as folder:
        command = ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                   f"--callgrind-out-file={folder}/cg.out", sys.executable, *sys.argv]
        done = subprocess.run(command, env={**os.environ, UNDER: folder}, stderr=subprocess.DEVNULL)
    sys.exit(done.returncode)

if __name__ == "__main__":
    main()
