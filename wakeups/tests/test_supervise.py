"""`manage.py supervise` as a real process, with the example company on PostgreSQL: the worker it
starts stops itself when idle; a run sleeping 5 s is resumed by a worker the supervisor started
again; a run started while no worker is up finishes without anyone starting a worker by hand; a
worker that dies is started again; SIGTERM to the supervisor leaves no process behind.

How soon after its deadline the run resumes is a figure (bench/wakeup_bench.py), not asserted here.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from runs import services
from runs.config.resolution import load_config
from runs.models import Run, RunStatus
from runs.testing import make_user
from runs.tests.processes import wait_until
from wakeups.models import WakeupRow
from wakeups.tests.worker_company.harness import REPO, database_url, group_members

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.process]
PATIENCE = 60.0


def wait_for(condition: Callable[[], Any], *, within: float, what: str, log: Path) -> Any:
    return wait_until(condition, within=within, what=what, describe=lambda: log.read_text(errors="replace")[-6000:])


def worker_pids(log: Path) -> list[int]:
    return [int(p) for p in re.findall(r"worker (\d+) started", log.read_text(errors="replace"))]



def started_after(log: Path, *, stops: int) -> bool:
    """Whether a worker was started after the `stops`-th time a worker stopped itself."""
    text = log.read_text(errors="replace")
    at = -1
    for _ in range(stops):
        at = text.find("stopped itself", at + 1)
        if at < 0:
            return False
    return re.search(r"worker \d+ started", text[at:]) is not None


def test_the_supervisor_scales_the_worker_to_zero_and_wakes_it(tmp_path: Path) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the supervisor test runs on PostgreSQL (LISTEN/NOTIFY)")
    var = tmp_path / "var"
    (var / "fakes").mkdir(parents=True)
    root = Path(settings.BASE_DIR) / "company"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DJANGO_SETTINGS"))}
    env.update(DATABASE_URL=database_url(connection.settings_dict), DJANGO_SETTINGS_MODULE="sanoma_site.settings",
               SANOMA_ROOT=str(root), SANOMA_FAKES="instance", SANOMA_VAR_DIR=str(var), SANOMA_APP_VERSION="sup-1",
               SANOMA_LEASE_SECONDS="3", SANOMA_IDLE_CHECK_SECONDS="0.5", SANOMA_IDLE_HORIZON_SECONDS="2",
               SANOMA_WORKERS="1", PYTHONUNBUFFERED="1")
    config = load_config(root, fakes="instance", fake_dir=var / "fakes", app_version="sup-1")
    make_user("tester", groups=["staff"], perms=["runs.start_workflow"])
    log = tmp_path / "supervise.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen([sys.executable, str(REPO / "manage.py"), "supervise"], cwd=REPO, env=env,
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    try:
        # It starts a worker at once; with nothing to do, the worker stops itself.
        wait_for(lambda: "stopped itself (idle)" in log.read_text(), within=PATIENCE, what="an idle stop", log=log)
        assert proc.poll() is None
        first_stop = WakeupRow.objects.get().stopped_at
        assert first_stop is not None

        # A run started while no worker is up: the NOTIFY on enqueue starts one; the run sleeps 5 s,
        # the worker registers the deadline and stops; the supervisor starts a worker again in time.
        run = services.start(workflow="follow-up", input={"order_id": "1001", "after_seconds": 5},
                             started_by="tester", run_id="sup-sleep", config=config)
        wait_for(lambda: Run.objects.get(pk=run.id).status == RunStatus.WAITING, within=PATIENCE,
                 what="the run to sleep", log=log)
        deadline = Run.objects.get(pk=run.id).wake_at
        assert deadline is not None
        wait_for(lambda: WakeupRow.objects.get().at == deadline and log.read_text().count("stopped itself") >= 2,
                 within=PATIENCE, what="the worker to register the deadline and stop", log=log)
        wait_for(lambda: Run.objects.get(pk=run.id).ended_at, within=PATIENCE, what="the run to resume and end",
                 log=log)
        # The worker that resumed it is a new one, started by the supervisor after the second stop (it
        # may start a little before the deadline, to be up in time, so the order of lines is the test).
        assert started_after(log, stops=2), log.read_text()
        finished = Run.objects.get(pk=run.id)
        assert finished.status == RunStatus.FINISHED, finished.error
        assert finished.ended_at is not None and finished.ended_at >= deadline
        print(f"resumed {(finished.ended_at - deadline).total_seconds():.3f} s after its deadline")

        # A run with no sleep, started while no worker is up, finishes on its own.
        wait_for(lambda: log.read_text().count("stopped itself") >= 3, within=PATIENCE,
                 what="the worker to stop again", log=log)
        quick = services.start(workflow="refunds-report", input={}, started_by="tester", run_id="sup-quick",
                               config=config)
        wait_for(lambda: Run.objects.get(pk=quick.id).status == RunStatus.FINISHED, within=PATIENCE,
                 what="the run started with no worker up to finish", log=log)

        # A worker that dies is started again.
        pid = worker_pids(log)[-1]
        if subprocess.run(["kill", "-0", str(pid)], capture_output=True).returncode == 0:
            os.killpg(pid, signal.SIGKILL)
            wait_for(lambda: "died" in log.read_text() and len(worker_pids(log)) > 0 and worker_pids(log)[-1] != pid,
                     within=PATIENCE, what="a new worker after one died", log=log)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        for pid in worker_pids(log):
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert code == 0, log.read_text()
    assert group_members(proc.pid) == []
    assert all(group_members(pid) == [] for pid in worker_pids(log))
