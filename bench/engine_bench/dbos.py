"""(d) the same workflow on DBOS Transact, each mode in a child process of its own."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from urllib.parse import urlparse

from engine_bench.common import SCRIPT
from engine_bench.database import recreate_database, with_db


def dbos_child(mode: str, runs: int, steps: int) -> None:
    """Runs in its own process on a fresh database; prints one JSON line."""
    url = os.environ["DATABASE_URL"]
    name = f"{urlparse(url).path.lstrip('/')}_dbos_{mode}"
    recreate_database(with_db(url, name))
    # dbos is a bench-only dependency (bench/requirements.txt), not installed in the project's venv.
    from dbos import DBOS

    DBOS(config={"name": "sanoma-bench", "system_database_url": with_db(url, name)})

    @DBOS.step()
    def trivial(n: int) -> dict:
        return {"n": n}

    @DBOS.workflow()
    def workflow(count: int) -> int:
        for n in range(count):
            trivial(n)
        return count

    launched = time.perf_counter()
    DBOS.launch()
    launch = time.perf_counter() - launched
    for _ in range(10):  # warm up
        workflow(steps)
    if mode == "direct":
        started = time.perf_counter()
        for _ in range(runs):
            workflow(steps)
        seconds = time.perf_counter() - started
    else:
        queue = DBOS.register_queue("bench", polling_interval_sec=0.01, worker_concurrency=10)
        started = time.perf_counter()
        handles = [queue.enqueue(workflow, steps) for _ in range(runs)]
        for handle in handles:
            handle.get_result(polling_interval_sec=0.005)
        seconds = time.perf_counter() - started
    print(json.dumps({"mode": mode, "steps_per_s": runs * steps / seconds, "seconds": seconds, "launch": launch}))
    sys.stdout.flush()
    DBOS.destroy()
    os._exit(0)  # DBOS's background threads must not hold the process open


def dbos(mode: str, runs: int, steps: int) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--dbos-child", mode, "--runs", str(runs), "--steps", str(steps)],
        capture_output=True, text=True, timeout=900, env={**os.environ},
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"DBOS ({mode}) failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1])
