"""(c) and (f): steps per second through a real `manage.py worker`, and a sleep's resumption delay."""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from engine_bench.common import REPO
from engine_bench.database import xact_commit
from engine_bench.figures import p95

STATS_SETTLE = 11.0  # seconds: PostgreSQL 15 reports an idle backend's counts 10 s late (PGSTAT_IDLE_INTERVAL)


def start_worker(env: dict[str, str], log: Path, workers: int):
    sys.path.insert(0, str(REPO))
    from wakeups.tests.worker_company.harness import Worker

    worker_env = {**{k: v for k, v in os.environ.items() if not k.startswith("DJANGO_SETTINGS")}, **env,
                  "SANOMA_WORKERS": str(workers), "DJANGO_SETTINGS_MODULE": "sanoma_site.settings",
                  "PYTHONUNBUFFERED": "1"}
    return Worker(worker_env, log).start(ready_within=60)


def with_worker(config: Any, runs: int, steps: int) -> dict[str, float]:
    """(c): start `runs` runs while the worker is up; steps/s from first start to last end. Its
    transactions a step (`xacts`): the whole system's (the starts, the worker's), the bench's own
    polls for the runs' end (20 a second) taken out (`xacts_with_polls` keeps them)."""
    from django.db.models import Max, Min

    from runs import services
    from runs.models import Run, RunStatus

    # The worker's backends report their counts at most once a second while busy, and up to 10 s
    # after they go idle: (c2)'s last second would land in this window, and this window's last in
    # none. So the count is read after both have settled; the idle worker's own meanwhile (about
    # 0.7 a second, 7 in 2 x 11 s) stays in it.
    time.sleep(STATS_SETTLE)
    x0 = xact_commit()
    wall = time.perf_counter()
    for i in range(runs):
        services.start(workflow="steps", input={"n": steps}, started_by="bench", run_id=f"c-{i}", config=config)
    enqueued = time.perf_counter() - wall
    ends = time.monotonic() + 600
    polls = 1  # the bench's own reads (each a transaction in autocommit), taken out of the system's count
    while Run.objects.filter(id__startswith="c-").exclude(status=RunStatus.FINISHED).exists():
        if time.monotonic() > ends:
            raise SystemExit("(c) did not finish within 600 s")
        time.sleep(0.05)
        polls += 1
    time.sleep(STATS_SETTLE)
    x1 = xact_commit()
    span = Run.objects.filter(id__startswith="c-").aggregate(first=Min("created_at"), last=Max("ended_at"))
    seconds = (span["last"] - span["first"]).total_seconds()
    own = polls + 2  # the polls, and xact_commit()'s flush and snapshot statements before its read
    return {"steps_per_s": runs * steps / seconds, "runs_per_s": runs / seconds, "seconds": seconds,
            "enqueue_per_s": runs / enqueued, "xacts": (x1 - x0 - own) / (runs * steps),
            "xacts_with_polls": (x1 - x0) / (runs * steps)}


def queue_before_worker(config: Any, runs: int, steps: int, prefix: str = "q-") -> None:
    """(c2): runs started before any worker is up, so the workers alone set the pace."""
    from runs import services

    for i in range(runs):
        services.start(workflow="steps", input={"n": steps}, started_by="bench", run_id=f"{prefix}{i}", config=config)


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
    return {"p50": statistics.median(delays), "p95": p95(delays),
            "max": delays[-1], "min": delays[0]}
