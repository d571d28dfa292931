"""bench/scale.py's worker series: steps/s of runs queued first, drained by 1, 2, 4, 8 worker
processes (`manage.py worker` with SANOMA_WORKERS=n), and the CPU spent per step, read from /proc:
the worker processes', the rest of the worker's process group's (django-q's sentinel, pusher and
monitor, the sweep, the supervisor) and the PostgreSQL backends' serving this database."""
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
    workers_cpu: float  # CPU seconds of the worker processes (those seen holding a run's lease)
    worker_pids: int  # how many there were (more than `workers` when django-q recycled one)
    others_cpu: float  # CPU seconds of the rest of the worker's process group
    backends_cpu: float  # CPU seconds of this database's PostgreSQL backends

    @property
    def worker_cpu_per_step(self) -> float:
        """CPU seconds the worker processes spend per step (each step is run by one of them)."""
        return self.workers_cpu / self.steps

    @property
    def group_cpu_per_step(self) -> float:
        return (self.workers_cpu + self.others_cpu) / self.steps

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
    have finished. CPU is read when the worker says it is up, then every 0.1 s until the last run
    has ended (so a process that exits meanwhile, e.g. a worker django-q recycles, keeps its last
    reading); the worker processes are those whose id (host:pid) was seen holding a run's lease."""
    from django.db.models import Max, Min

    from runs.engine import clock
    from runs.models import Run, RunStatus, Step
    from runs.tests.processes import group_members

    prefix = f"s{workers}-"
    queue_before_worker(config, runs, steps, prefix=prefix)
    worker = start_worker(env, log, workers)
    pgid = worker.pgid
    assert pgid is not None
    since = clock.now()
    group_before, backends_before = processes_cpu(group_members(pgid)), processes_cpu(backend_pids())
    group, backends = dict(group_before), dict(backends_before)
    seen: set[int] = set()

    def read() -> int:
        group.update(processes_cpu(group_members(pgid)))
        backends.update(processes_cpu(backend_pids()))
        owners = Run.objects.filter(id__startswith=prefix, status=RunStatus.RUNNING).values_list("lease_owner",
                                                                                                 flat=True)
        seen.update(int(pid) for pid in (owner.rpartition(":")[2] for owner in owners) if pid.isdigit())
        return Run.objects.filter(id__startswith=prefix, status=RunStatus.FINISHED).count()

    try:
        worker.wait_for(
            lambda: not Run.objects.filter(id__startswith=prefix).exclude(status=RunStatus.FINISHED).exists(),
            within=120, what=f"{runs} runs drained by {workers} workers", every=0.1, progress=read)
        read()
        worker.terminate(within=60)
    except BaseException:
        print(worker.describe())
        raise
    finally:
        worker.cleanup()
    first = Step.objects.filter(run__id__startswith=prefix).aggregate(first=Min("created_at"))["first"]
    last = Run.objects.filter(id__startswith=prefix).aggregate(last=Max("ended_at"))["last"]
    seconds = (last - first).total_seconds()
    counted = Step.objects.filter(run__id__startswith=prefix, created_at__gte=since).count()
    spent = cpu_between(group_before, group)
    if not seen & spent.keys():
        raise SystemExit(f"{workers} workers: no worker process seen holding a lease ({sorted(spent)})")
    return Drained(workers=workers, steps=max(counted, 1), seconds=seconds, steps_per_s=runs * steps / seconds,
                   workers_cpu=sum(cpu for pid, cpu in spent.items() if pid in seen),
                   worker_pids=len(seen & spent.keys()),
                   others_cpu=sum(cpu for pid, cpu in spent.items() if pid not in seen),
                   backends_cpu=sum(cpu_between(backends_before, backends).values()))


def worker_series(config: Any, env: dict[str, str], var: Path, counts: list[int], runs: int,
                  steps: int) -> list[Drained]:
    """`drain` for each worker count in turn, printing each as it comes."""
    found = []
    for workers in counts:
        time.sleep(1)  # let the previous worker's backends go
        d = drain(config, env, var / f"worker-{workers}.log", workers, runs, steps)
        print(f"  {workers} worker(s): {d.steps_per_s:,.0f} steps/s ({d.seconds:.2f} s); CPU per step: workers "
              f"{d.worker_cpu_per_step * 1000:.2f} ms, whole worker group {d.group_cpu_per_step * 1000:.2f} ms, "
              f"PostgreSQL backends {d.backends_cpu_per_step * 1000:.2f} ms ({d.worker_pids} worker processes seen)",
              flush=True)
        found.append(d)
    return found
