"""Wake-up figures on PostgreSQL: how soon a sleep or a decision resumes its run with a worker up,
a cold start through `manage.py supervise`, idle database load, and resident memory.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/sanoma_bench .venv/bin/python bench/wakeup_bench.py
    ... bench/wakeup_bench.py --only decision --decisions 50   # one part, more samples

The database is migrated first; run ids carry a fresh tag, so the bench can run again on the same
database (runs, steps and ledger records are kept: nothing may delete them). Prints one line per figure; the decision
figure is followed by where its time goes (the decide call, the run reading the decision, the end).
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
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

from changes.selectors import declared_resources  # noqa: E402
from runs import services  # noqa: E402
from runs.approvals import services as approvals  # noqa: E402
from runs.config.registry import get_config  # noqa: E402
from runs.models import LedgerRecord, Run, RunStatus  # noqa: E402
from runs.seed import seed_from_datafiles  # noqa: E402

RUNS = 50
TAG = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
PARTS = ("sleep", "decision", "idle", "supervisor")


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=PARTS,
                        help="measure only this part (repeatable; default: all)")
    parser.add_argument("--decisions", type=int, default=20, help="how many decisions to time (default 20)")
    options = parser.parse_args()
    parts = set(options.only or PARTS)
    if connection.vendor != "postgresql":
        raise SystemExit("bench/wakeup_bench.py measures PostgreSQL: set DATABASE_URL, e.g.\n\n"
                         "  DATABASE_URL=postgresql://postgres@127.0.0.1:5432/sanoma_bench "
                         ".venv/bin/python bench/wakeup_bench.py\n\n"
                         "(the database is migrated and its runs kept, not dropped)")
    call_command("migrate", verbosity=0)
    seed_from_datafiles(declared_resources())
    config = get_config()

    worker = spawn("worker")
    worker_rss = 0
    try:
        time.sleep(4)  # the worker is up
        if "sleep" in parts:
            sleep_figure(config)
        if "decision" in parts:
            decision_figure(config, options.decisions)
        if "idle" in parts or "supervisor" in parts:
            # (c) idle worker: database load and memory
            worker_qps = load(10)
            worker_rss = rss_kb(worker.pid)
            print(f"idle worker: {worker_qps:.1f} transactions/s; resident memory {worker_rss / 1024:.0f} MB "
                  f"(its process group)", flush=True)
    finally:
        stop(worker)
    if "supervisor" in parts:
        supervisor_figure(config, worker_rss)


def sleep_figure(config) -> None:
    # (a) sleep deadline -> resumed: runs sleeping 1-3 s, deadlines spread out
    ids = []
    for i in range(RUNS):
        run = services.start(workflow="follow-up", input={"order_id": "1001", "after_seconds": 1 + (i % 40) * 0.05},
                             started_by="alice", run_id=f"bench-sleep-{TAG}-{i}", config=config)
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



def decision_figure(config, count: int) -> None:
    # (b) decision -> resumed: refunds waiting for finance-lead
    decided_ms, call_ms, read_ms = [], [], []
    for i in range(count):
        run = services.start(workflow="refund", input={"order_id": "1002", "amount_cents": 100},
                             started_by="alice", run_id=f"bench-decide-{TAG}-{i}", config=config)
        wait(lambda run=run: Run.objects.get(pk=run.id).status == RunStatus.WAITING)
        at = datetime.now(UTC)
        approvals.decide(run_id=run.id, decision="approve", by="finance-lead", timeout=0)
        returned = datetime.now(UTC)
        wait(lambda run=run: Run.objects.get(pk=run.id).ended_at is not None, within=120.0)
        ended = Run.objects.get(pk=run.id).ended_at
        assert ended is not None
        read = LedgerRecord.objects.get(run_id=run.id, kind="approval.decided").at
        decided_ms.append((ended - at).total_seconds() * 1000)
        call_ms.append((returned - at).total_seconds() * 1000)
        read_ms.append(read - returned.timestamp() * 1000)
    print(f"decision -> run resumed and ended ({count} runs): p50 {statistics.median(decided_ms):.0f} ms, "
          f"p95 {pct(decided_ms, 0.95):.0f} ms")
    print(f"  of which: the decide call p50 {statistics.median(call_ms):.0f} ms, p95 {pct(call_ms, 0.95):.0f} ms; "
          f"call returned -> the run read the decision p50 {statistics.median(read_ms):.0f} ms, "
          f"p95 {pct(read_ms, 0.95):.0f} ms")


def supervisor_figure(config, worker_rss: int) -> None:
    # (d) supervisor: cold start, idle load, memory
    fast = {"SANOMA_IDLE_CHECK_SECONDS": "0.5", "SANOMA_IDLE_HORIZON_SECONDS": "2"}
    supervisor = spawn("supervise", env=fast)
    time.sleep(15)  # its first worker catches up and stops itself
    run = services.start(workflow="follow-up", input={"order_id": "1001", "after_seconds": 12},
                         started_by="alice", run_id=f"bench-cold-{TAG}", config=config)
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


if __name__ == "__main__":
    main()
