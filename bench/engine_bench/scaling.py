"""bench/scale.py's worker series: steps/s of runs queued first, drained by 1, 2, 4, 8 worker
processes (`manage.py worker` with SANOMA_WORKERS=n), and the CPU the processes spend per step,
read from /proc: the worker group's (the cluster's processes, its sweep, its supervisor) and the
PostgreSQL backends serving this database."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine_bench.figures import cpu_between, processes_cpu
from engine_bench.worker import queue_before_worker, start_worker


@dataclass
class Drained:
    """One worker count's figures."""

    workers: int
    steps: int  # steps recorded while the CPU was read (from the worker's ready line to the end)
    seconds: float  # first checkpoint to the last run's end (database timestamps)
    steps_per_s: float
    group_cpu: float  # CPU seconds of the worker's whole process group between the two readings
    busiest: list[float]  # the `workers` busiest processes' CPU seconds: the worker processes
    backends_cpu: float  # CPU seconds of this database's PostgreSQL backends (those alive at the end)

    @property
    def worker_cpu_per_step(self) -> float:
        """CPU seconds the worker processes spend per step (each step is run by one of them)."""
        return sum(self.busiest) / self.steps

    @property
    def group_cpu_per_step(self) -> float:
        return self.group_cpu / self.steps

    @property
    def backends_cpu_per_step(self) -> float:
        return self.backends_cpu / self.steps


def backend_pids() -> list[int]:
    """The PostgreSQL backends connected to this database, this process's own excepted."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        return [int(row[0]) for row in cursor.fetchall()]


def drain(config: Any, env: dict[str, str], log: Path, workers: int, runs: int, steps: int) -> Drained:
    """Queue `runs` runs of `steps` steps, start a worker with `workers` processes, wait until all
    have finished; CPU read when the worker says it is up and when the last run has ended."""
    from runs.engine import clock
    from runs.models import Run, RunStatus, Step
    from runs.tests.processes import group_members

    prefix = f"s{workers}-"
    queue_before_worker(config, runs, steps, prefix=prefix)
    worker = start_worker(env, log, workers)
    try:
        assert worker.pgid is not None
        since = clock.now()
        group_before = processes_cpu(group_members(worker.pgid))
        backends_before = processes_cpu(backend_pids())
        worker.wait_for(
            lambda: not Run.objects.filter(id__startswith=prefix).exclude(status=RunStatus.FINISHED).exists(),
            within=120, what=f"{runs} runs drained by {workers} workers", every=0.05,
            progress=lambda: Run.objects.filter(id__startswith=prefix, status=RunStatus.FINISHED).count())
        group_after = processes_cpu(group_members(worker.pgid))
        backends_after = processes_cpu(backend_pids())
        worker.terminate(within=60)
    except BaseException:
        print(worker.describe())
        raise
    finally:
        worker.cleanup()
    from django.db.models import Max, Min

    first = Step.objects.filter(run__id__startswith=prefix).aggregate(first=Min("created_at"))["first"]
    last = Run.objects.filter(id__startswith=prefix).aggregate(last=Max("ended_at"))["last"]
    seconds = (last - first).total_seconds()
    counted = Step.objects.filter(run__id__startswith=prefix, created_at__gte=since).count()
    spent = cpu_between(group_before, group_after)
    backends = cpu_between(backends_before, backends_after)
    return Drained(workers=workers, steps=max(counted, 1), seconds=seconds, steps_per_s=runs * steps / seconds,
                   group_cpu=sum(spent.values()), busiest=sorted(spent.values(), reverse=True)[:workers],
                   backends_cpu=sum(backends.values()))


def worker_series(config: Any, env: dict[str, str], var: Path, counts: list[int], runs: int,
                  steps: int) -> list[Drained]:
    """`drain` for each worker count in turn, printing each as it comes."""
    found = []
    for workers in counts:
        time.sleep(1)  # let the previous worker's backends go
        d = drain(config, env, var / f"worker-{workers}.log", workers, runs, steps)
        print(f"  {workers} worker(s): {d.steps_per_s:,.0f} steps/s ({d.seconds:.2f} s); CPU per step: workers "
              f"{d.worker_cpu_per_step * 1000:.2f} ms, whole worker group {d.group_cpu_per_step * 1000:.2f} ms, "
              f"PostgreSQL backends {d.backends_cpu_per_step * 1000:.2f} ms", flush=True)
        found.append(d)
    return found
