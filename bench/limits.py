"""What a limit costs a call: the gate's database work before and after the driver. Prints figures;
not a test.

Usage (the database is migrated, and the limits' tables of the bench's budgets are cleared):

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/sanoma_bench_limits .venv/bin/python bench/limits.py
    SANOMA_VAR_DIR=/tmp/bench-limits .venv/bin/python bench/limits.py      # SQLite, the embedded default

For each kind of limit, `runs.limits.gate.enter`, `Passage.go` (the look at the clock as the
request leaves) and `Passage.leave` as a call makes them, with a budget that never makes the call
wait (a rate of 1,000,000/s), on one connection, N times: the median and p95 wall time per call.
What a call waiting for its turn spends waiting is the limit itself, not its cost, and is not
counted. First, what a call of an operation declaring no limit pays (`gate.overridden`: a look at
the overrides last read, with one override in force elsewhere).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sanoma_site.settings")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Point it at a database with DATABASE_URL (PostgreSQL), or leave DATABASE_URL unset for the "
               "embedded SQLite in SANOMA_VAR_DIR, e.g.\n\n"
               "  DATABASE_URL=postgresql://postgres@127.0.0.1:5432/sanoma_bench_limits "
               ".venv/bin/python bench/limits.py\n"
               "  SANOMA_VAR_DIR=/tmp/bench-limits .venv/bin/python bench/limits.py\n\n"
               "The database is migrated, not dropped; the bench's own budgets and holds are cleared.")
    parser.add_argument("-n", type=int, default=2000, help="calls per kind (default 2000)")
    args = parser.parse_args()

    import django
    import django.utils.timezone

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    from connectors.limits import parse_rate
    from runs.limits import gate, overrides
    from runs.limits.models import LimitCursor, LimitHold, LimitOverride, LimitSlot

    LimitOverride.objects.update_or_create(target="bench-elsewhere", defaults={"rate": "1/s", "set_by": "bench",
                                                                              "set_at": django.utils.timezone.now()})
    overrides.forget()
    overrides.current()
    unlimited: Any = SimpleNamespace(id="plain.ping.send", vendor="plain")  # what gate.overridden reads of an op
    took = []
    for _ in range(args.n * 10):
        began = time.perf_counter()
        gate.overridden(unlimited)
        took.append(time.perf_counter() - began)
    took.sort()
    LimitOverride.objects.filter(target="bench-elsewhere").delete()
    print(f"{connection.vendor}: a call with no limit, {args.n * 10} looks: median "
          f"{statistics.median(took) * 1e6:.2f} µs, p95 {took[int(len(took) * 0.95)] * 1e6:.2f} µs, no query")
    fast = parse_rate("1000000/s")
    kinds = {
        "rate": [gate.Applied("bench", None, "", fast, None)],
        "concurrency": [gate.Applied("bench", None, "", None, 4)],
        "rate and concurrency": [gate.Applied("bench", None, "", fast, 4)],
        "connector and operation, keyed": [gate.Applied("bench", None, "", fast, 4),
                                           gate.Applied("bench.op", "account", "acct_1", fast, 2)],
    }
    print(f"{connection.vendor}, {args.n} calls a kind: the gate's cost per call (enter, go and leave)")
    for name, applied in kinds.items():
        LimitCursor.objects.filter(scope__startswith="bench").delete()
        LimitSlot.objects.filter(scope__startswith="bench").delete()
        LimitHold.objects.filter(holder__startswith="bench").delete()
        took = []
        for i in range(args.n):
            began = time.perf_counter()
            passage = gate.enter(applied, holder=f"bench:{i}", timeout=60)
            passage.go()
            passage.leave()
            took.append(time.perf_counter() - began)
        took.sort()
        print(f"  {name:<32} median {statistics.median(took) * 1000:.3f} ms, "
              f"p95 {took[int(len(took) * 0.95)] * 1000:.3f} ms")


if __name__ == "__main__":
    main()
