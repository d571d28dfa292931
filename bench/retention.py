"""Retention on many ended runs while a runnable run advances: `.venv/bin/python bench/retention.py`
on PostgreSQL, `DATABASE_URL=postgresql://postgres@127.0.0.1:5432/sanoma_retention_bench` (that
database is dropped and made again; the bench connects as its owner, as retention must).

1. Makes `--runs` ended runs (100,000 by default) of the `steps` workflow (two calls each) that
   ended `--days` days ago and before: one run is started and finished through the engine's own
   services (`services.start`, `advance`), then copied in bulk: its run row, its steps and its
   ledger records, each copy's records with their own ids and content digests (as
   `LedgerRecord.save` prepares them), linked into their chains by the database's own chain trigger,
   so `ledger verify` holds for every copy and for the export.
2. Starts a second process that, until told to stop, starts a ten-step `steps` run and advances it
   to its end, again and again: one claim per run. Each claim's time is recorded (wall, ms).
3. Measures the claims for `--baseline` seconds with nothing else running, then runs retention
   (`runs.retention.services.run_retention`, every run ended more than a day ago, the same code as
   `manage.py retention`) and measures the claims made meanwhile.
4. Checks the live ledger (`ledger verify`) and the export (`ledger verify --export`) and prints
   the figures: runs removed, batches, wall and CPU time, the export's size, and the claim's p50,
   p95 and max with and without retention beside it (aim: p95 under 10 ms while retention runs).

    --runs 100000   ended runs to make and remove
    --days 30       they ended over this many days (one export file per day)
    --baseline 10   seconds of claims measured before retention starts
    --batch-seconds, --pause   as `manage.py retention`'s
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sanoma_site.settings")
os.environ.setdefault("SANOMA_VAR_DIR", "/tmp/var_retention_bench")
os.environ["SANOMA_ROOT"] = str(REPO / "bench" / "parked_company")
os.environ["SANOMA_FAKES"] = "instance"
os.environ["SANOMA_APP_VERSION"] = "bench-retention"

ADVANCER = "--advancer" in sys.argv
from engine_bench.common import bench_database_url, bench_parser  # noqa: E402
from engine_bench.database import recreate_database  # noqa: E402

EXAMPLE_DB = "sanoma_retention_bench"  # the database of --help's example and of the refusal without DATABASE_URL
OWNER_NOTE = "The bench connects as the database's owner, as retention must."


def options_parser() -> argparse.ArgumentParser:
    parser = bench_parser("retention.py", __doc__, EXAMPLE_DB, note=OWNER_NOTE, paragraph=True)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--baseline", type=float, default=10.0)
    parser.add_argument("--batch-seconds", type=float, default=1.0, help="as manage.py retention's")
    parser.add_argument("--pause", type=float, default=0.0, help="as manage.py retention's")
    parser.add_argument("--advancer", nargs=2, metavar=("OUT", "STOP"), help=argparse.SUPPRESS)  # its child
    return parser


# The options are read before the database is touched: --help (or a wrong option) drops nothing.
OPTIONS = options_parser().parse_args()
bench_database_url("retention.py", EXAMPLE_DB)
if not ADVANCER:
    recreate_database(os.environ["DATABASE_URL"])

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402

import runs.engine.advance as advancing  # noqa: E402
from runs import ledger, ledger_chain, services  # noqa: E402
from runs.config.registry import get_config  # noqa: E402
from runs.engine import clock  # noqa: E402
from runs.engine.advance import Advanced, advance  # noqa: E402
from runs.models import LedgerRecord, Run, Step  # noqa: E402
from runs.retention import services as retention  # noqa: E402
from runs.retention.export import verify_paths  # noqa: E402
from runs.testing import make_user  # noqa: E402

WORKER = "bench-retention"
CHUNK = 2000


def finish(workflow: str, input: dict[str, Any]) -> Run:
    config = get_config()
    run = services.start(workflow=workflow, input=input, started_by="bench", config=config)
    while advance(run.id, worker_id=WORKER, config=config) == Advanced.QUEUED:
        pass
    run.refresh_from_db()
    return run


def make_ended_runs(count: int, days: int) -> None:
    """`count` copies of one finished run, ending evenly over `days` days up to `days` days ago."""
    template = finish("steps", {"n": 2})
    run_row = Run.objects.filter(pk=template.pk).values().get()
    step_rows = list(Step.objects.filter(run_id=template.pk).values())
    record_rows = list(LedgerRecord.objects.filter(run_id=template.pk).order_by("chain_index")
                       .values(*ledger_chain.CONTENT_FIELDS))
    now = clock.now()
    span = timedelta(days=days)
    started = time.perf_counter()
    for first in range(0, count, CHUNK):
        runs: list[Run] = []
        steps: list[Step] = []
        records: list[LedgerRecord] = []
        for i in range(first, min(count, first + CHUNK)):
            run_id = f"ended-{i:07d}"
            ended = now - timedelta(days=days) - span * (i / count)
            runs.append(Run(**{**run_row, "id": run_id, "created_at": ended - timedelta(seconds=1),
                               "queued_at": ended - timedelta(seconds=1), "updated_at": ended, "ended_at": ended}))
            steps.extend(Step(**{**row, "id": None, "run_id": run_id, "created_at": ended}) for row in step_rows)
            for row in record_rows:
                record = LedgerRecord(**{**row, "run_id": run_id, "at": int(ended.timestamp() * 1000),
                                         "record_id": row["record_id"].replace(template.pk, run_id, 1)})
                ledger_chain.prepare(record, "default")
                records.append(record)
        with transaction.atomic():
            Run.objects.bulk_create(runs)
            Step.objects.bulk_create(steps)
            LedgerRecord.objects.bulk_create(records)
        if (first // CHUNK) % 10 == 9:
            print(f"  made {first + len(runs):,} ended runs ({time.perf_counter() - started:.0f} s)", flush=True)
    print(f"made {count:,} ended runs ({len(step_rows)} steps and {len(record_rows)} ledger records each) in "
          f"{time.perf_counter() - started:.0f} s", flush=True)


def advancer(out: Path, stop: Path) -> None:
    """Advance ten-step runs one after another until `stop` exists; each claim's time to `out`."""
    samples: list[tuple[float, float, float]] = []
    claim = advancing.claim

    def timed(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        claimed = claim(*args, **kwargs)
        samples.append((time.time(), (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000))
        return claimed

    advancing.claim = timed
    while not stop.exists():
        finish("steps", {"n": 10})
    out.write_text(json.dumps(samples))


def figures(samples: list[tuple[float, float, float]], start: float, end: float) -> str:
    walls = sorted(s[1] for s in samples if start <= s[0] < end)
    cpus = [s[2] for s in samples if start <= s[0] < end]
    if len(walls) < 2:
        return "too few claims to tell"
    p95 = statistics.quantiles(walls, n=100, method="inclusive")[94]
    return (f"{len(walls)} claims: p50 {statistics.median(walls):.2f} ms, p95 {p95:.2f} ms, max {walls[-1]:.2f} ms "
            f"(CPU p50 {statistics.median(cpus):.2f} ms)")


def main() -> None:
    args = OPTIONS
    if args.advancer:
        advancer(Path(args.advancer[0]), Path(args.advancer[1]))
        return
    var = Path(os.environ["SANOMA_VAR_DIR"])
    folder = var / "retention-export"
    for old in folder.glob("runs-*.jsonl") if folder.exists() else ():
        old.unlink()
    out, stop = var / "claims.json", var / "stop"
    stop.unlink(missing_ok=True)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    call_command("migrate", verbosity=0)
    make_user("bench", perms=["runs.start_workflow"])
    make_ended_runs(args.runs, args.days)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    connection.close()

    child = subprocess.Popen([sys.executable, __file__, "--advancer", str(out), str(stop)])
    time.sleep(2)  # its start-up (config, first connection) is not measured
    baseline_from = time.time()
    time.sleep(args.baseline)
    retention_from = time.time()
    wall, cpu = time.perf_counter(), time.process_time()
    rules = retention.Rules({}, default=timedelta(days=1))

    def progress(batch: retention.Batch, done: retention.Done) -> None:
        if batch.number % 25 == 0:
            print(f"  batch {batch.number}: {batch.runs} runs in {batch.seconds * 1000:.0f} ms "
                  f"(removal {batch.remove_seconds * 1000:.0f} ms); "
                  f"{done.runs:,} removed", flush=True)

    done = retention.run_retention(rules=rules, folder=folder, progress=progress,
                                   batch_seconds=args.batch_seconds, pause=args.pause)
    retention_wall, retention_cpu = time.perf_counter() - wall, time.process_time() - cpu
    retention_to = time.time()
    stop.touch()
    child.wait(timeout=120)
    samples = json.loads(out.read_text())

    sizes = [b.runs for b in done.batches]
    seconds = sorted(b.seconds for b in done.batches)
    removals = sorted(b.remove_seconds for b in done.batches)
    print(f"retention: {done.runs:,} runs, {done.steps:,} steps, {done.records:,} ledger records removed in "
          f"{len(done.batches)} batches ({min(sizes)}-{max(sizes)} runs, median {statistics.median(sizes):.0f}); "
          f"a batch took median {statistics.median(seconds) * 1000:.0f} ms, max {seconds[-1] * 1000:.0f} ms "
          f"(export, read-back check and removal); its removal's transaction median "
          f"{statistics.median(removals) * 1000:.0f} ms, max {removals[-1] * 1000:.0f} ms")
    print(f"retention: {retention_wall:.1f} s wall, {retention_cpu:.1f} s CPU in its process "
          f"({done.runs / retention_wall:,.0f} runs/s)")
    size = sum(p.stat().st_size for p in folder.glob("runs-*.jsonl"))
    print(f"export: {len(done.files)} files, {size / 1e6:.1f} MB in {folder}")
    print(f"claims, nothing else running:  {figures(samples, baseline_from, retention_from)}")
    print(f"claims while retention ran:    {figures(samples, retention_from, retention_to)}")

    checked_at = time.perf_counter()
    checked = verify_paths([folder])
    print(f"ledger verify --export: {checked.runs:,} runs, {checked.records:,} records, "
          f"{len(checked.problems)} problems ({time.perf_counter() - checked_at:.1f} s)")
    live = ledger.verify()
    print(f"ledger verify (live): {live.runs} chains, {live.records} records, {len(live.breaks)} broken; "
          f"{Run.objects.filter(pk__startswith='ended-').count()} of the ended runs left")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"the advancing process: {usage.ru_utime + usage.ru_stime:.1f} s CPU")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if checked.problems or live.breaks:
        raise SystemExit("the export or the live ledger did not verify")


if __name__ == "__main__":
    main()
