"""Wake-up figures on PostgreSQL: how soon a sleep or a decision resumes its run with a worker up,
a cold start through `manage.py supervise`, idle database load, and resident memory.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/sanoma_bench .venv/bin/python bench/wakeup_bench.py

The database is migrated and its runs deleted first. Prints one line per figure.
"""
from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sanoma_site.settings")
os.environ.setdefault("SANOMA_VAR_DIR", "/tmp/sanoma_bench_wakeups")
os.environ["SANOMA_ROOT"] = str(REPO / "company")
os.environ["SANOMA_FAKES"] = "instance"
os.environ["SANOMA_APP_VERSION"] = "bench-wakeups"

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from runs import services  # noqa: E402
from runs.approvals import services as approvals  # noqa: E402
from runs.config.registry import get_config  # noqa: E402
from runs.models import Run, RunStatus  # noqa: E402
from runs.seed import seed_demo_company  # noqa: E402

RUNS = 50


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def spawn(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, str(REPO / "manage.py"), *args], cwd=REPO, start_new_session=True,
                            env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def rss_kb(pgid: int) -> int:
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            if int(stat[stat.rindex(")") + 2:].split()[2]) != pgid:
                continue
            status = (entry / "status").read_text()
        except (OSError, ValueError):
            continue
        total += int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))
    return total


def transactions() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()")
        return int(cursor.fetchone()[0])


def load(seconds: float) -> float:
    """Transactions a second on this database (each autocommit query is one) while others idle."""
    connection.close()
    before = transactions()
    time.sleep(seconds)
    after = transactions()
    return (after - before - 1) / seconds


def wait(condition, within: float = 120.0) -> None:
    ends = time.monotonic() + within
    while not condition():
        if time.monotonic() > ends:
            raise SystemExit("timed out")
        time.sleep(0.02)


def main() -> None:
    if connection.vendor != "postgresql":
        raise SystemExit("bench/wakeup_bench.py measures PostgreSQL: set DATABASE_URL=postgresql://...")
    call_command("migrate", verbosity=0)
    Run.objects.all().delete()
    seed_demo_company()
    config = get_config()

    worker = spawn("worker")
    wait(lambda: Run.objects.exists() or True)
    time.sleep(4)  # the worker is up
    # (a) sleep deadline -> resumed: runs sleeping 1-3 s, deadlines spread out
    ids = []
    for i in range(RUNS):
        run = services.start(workflow="follow-up", input={"order_id": "1001", "after_seconds": 1 + (i % 40) * 0.05},
                             started_by="alice", run_id=f"bench-sleep-{i}", config=config)
        ids.append(run.id)
    wait(lambda: Run.objects.filter(pk__in=ids, status=RunStatus.WAITING).count()
         + Run.objects.filter(pk__in=ids, ended_at__isnull=False).count() == RUNS)
    deadlines = dict(Run.objects.filter(pk__in=ids).values_list("id", "wake_at"))
    wait(lambda: Run.objects.filter(pk__in=ids, ended_at__isnull=False).count() == RUNS)
    sleep_ms = []
    for r in Run.objects.filter(pk__in=ids):
        deadline_of = deadlines.get(r.id)
        if deadline_of is not None and r.ended_at is not None:
            sleep_ms.append((r.ended_at - deadline_of).total_seconds() * 1000)
    print(f"sleep deadline -> run resumed and ended ({len(sleep_ms)} runs): p50 {statistics.median(sleep_ms):.0f} ms, "
          f"p95 {pct(sleep_ms, 0.95):.0f} ms")

    # (b) decision -> resumed: refunds waiting for finance-lead
    decided_ms = []
    for i in range(20):
        run = services.start(workflow="refund", input={"order_id": "1002", "amount_cents": 100},
                             started_by="alice", run_id=f"bench-decide-{i}", config=config)
        wait(lambda run=run: Run.objects.get(pk=run.id).status == RunStatus.WAITING)
        at = datetime.now(UTC)
        approvals.decide(run_id=run.id, decision="approve", by="finance-lead", timeout=0)
        wait(lambda run=run: Run.objects.get(pk=run.id).ended_at is not None)
        ended = Run.objects.get(pk=run.id).ended_at
        assert ended is not None
        decided_ms.append((ended - at).total_seconds() * 1000)
    print(f"decision -> run resumed and ended (20 runs): p50 {statistics.median(decided_ms):.0f} ms, "
          f"p95 {pct(decided_ms, 0.95):.0f} ms")

    # (c) idle worker: database load and memory
    worker_qps = load(10)
    worker_rss = rss_kb(worker.pid)
    stop(worker)
    print(f"idle worker: {worker_qps:.1f} transactions/s; resident memory {worker_rss / 1024:.0f} MB "
          f"(its process group)")

    # (d) supervisor: cold start, idle load, memory
    fast = {"SANOMA_IDLE_CHECK_SECONDS": "0.5", "SANOMA_IDLE_HORIZON_SECONDS": "2"}
    supervisor = spawn("supervise", env=fast)
    time.sleep(15)  # its first worker catches up and stops itself
    run = services.start(workflow="follow-up", input={"order_id": "1001", "after_seconds": 12},
                         started_by="alice", run_id="bench-cold", config=config)
    wait(lambda: Run.objects.get(pk=run.id).status == RunStatus.WAITING)
    deadline = Run.objects.get(pk=run.id).wake_at
    time.sleep(8)  # the worker registered the deadline and stopped
    supervisor_rss = rss_kb(supervisor.pid)
    wait(lambda: Run.objects.get(pk=run.id).ended_at is not None)
    ended = Run.objects.get(pk=run.id).ended_at
    assert ended is not None and deadline is not None
    print(f"cold start (deadline -> worker up -> run resumed and ended): "
          f"{(ended - deadline).total_seconds() * 1000:.0f} ms after the deadline")
    time.sleep(12)  # its worker stops again
    supervisor_qps = load(10)
    stop(supervisor)
    print(f"idle supervisor (no worker up): {supervisor_qps:.1f} transactions/s; resident memory "
          f"{supervisor_rss / 1024:.0f} MB ({supervisor_rss / max(worker_rss, 1):.0%} of a worker's)")
    _ = timedelta


if __name__ == "__main__":
    main()
