"""A real Prometheus (Debian's `prometheus`) scrapes a running site, with the token, while a real
worker process advances a run that `manage.py start` (a third process) started: its query API shows
the series, the counters added up over the processes that wrote them.
"""
from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from runs.models import Run, Step
from runs.testing import make_user
from runs.tests.processes import REPO, Worker, database_url, wait_until, worker_env

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
VERSION = "telemetry-scrape"
TOKEN = "scrape-token-for-the-test"
HANG = 120.0  # only turns a hang into a failure


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Process:
    """A long-running process with its output in a file, stopped at the end."""

    def __init__(self, argv: list[str], env: dict[str, str] | None, log: Path) -> None:
        self.log = log
        self._out = log.open("wb")
        self.proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=self._out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)

    def output(self) -> str:
        self._out.flush()
        return self.log.read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._out.close()


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


@pytest.fixture
def site(tmp_path: Path) -> Iterator[dict[str, Any]]:
    if not Path(PROMETHEUS).exists():
        pytest.skip("Prometheus is not installed (apt-get install prometheus)")
    make_user("alice", groups=["staff"], perms=["runs.start_workflow"])
    make_user("finance-lead", groups=["staff", "finance"])
    var = tmp_path / "var"
    env = worker_env(db_url=database_url(connection.settings_dict), var_dir=var, version=VERSION,
                     root=REPO / "company", SANOMA_WORKERS=1, SANOMA_METRICS_TOKEN=TOKEN)
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)  # theirs: <var>/metrics, shared by the site and the worker
    started: list[Any] = []
    try:
        worker = Worker(env, tmp_path / "worker.log").start(ready_within=HANG)
        started.append(worker)
        port = free_port()
        web = Process([sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"], env,
                      tmp_path / "site.log")
        started.append(web)
        wait_until(lambda: listening(port), within=HANG, what="the site to listen", describe=web.output)
        yield {"env": env, "port": port, "tmp": tmp_path, "worker": worker, "web": web, "started": started}
    finally:
        for process in reversed(started):
            if isinstance(process, Worker):
                process.terminate()
            else:
                process.stop()


def prometheus(site: dict[str, Any]) -> tuple[Process, int]:
    tmp: Path = site["tmp"]
    port = free_port()
    config = tmp / "prometheus.yml"
    config.write_text(f"""
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: sanoma
    metrics_path: /metrics
    authorization:
      credentials: {TOKEN}
    static_configs:
      - targets: ["127.0.0.1:{site['port']}"]
""")
    process = Process([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp / 'tsdb'}",
                       f"--web.listen-address=127.0.0.1:{port}"], None, tmp / "prometheus.log")
    site["started"].append(process)
    return process, port


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=5) as answer:
            return bool(answer.status == 200)
    except OSError:  # not listening yet, or 503 while it loads
        return False


def query(port: int, promql: str) -> dict[tuple, float]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=10) as answer:
        body = json.load(answer)
    assert body["status"] == "success", body
    return {tuple(sorted((k, v) for k, v in r["metric"].items() if k not in ("__name__", "instance", "job"))):
            float(r["value"][1]) for r in body["data"]["result"]}


def test_prometheus_scrapes_the_site_and_sees_the_workers_and_the_starters_counts(site):
    start = subprocess.run(
        [sys.executable, "manage.py", "start", "refund", "--as", "alice", "--set", "order_id=1001",
         "--set", "amount_cents=1500"], cwd=REPO, env=site["env"], capture_output=True, text=True, timeout=HANG)
    assert start.returncode == 0, start.stdout + start.stderr
    run = site["worker"].wait_for(
        lambda: Run.objects.filter(workflow="refund", status="waiting", waiting_for="approval").first(),
        within=HANG, what="the refund to wait for its approval")
    calls = Step.objects.filter(run=run, kind="call").count()
    assert calls >= 1

    prom, port = prometheus(site)

    def describe() -> str:
        return f"prometheus:\n{prom.output()}\nsite:\n{site['web'].output()}"

    wait_until(lambda: ready(port), within=HANG, what="Prometheus to be ready", describe=describe, every=0.2)
    wait_until(lambda: query(port, 'up{job="sanoma"} == 1'), within=HANG, what="a successful scrape",
               describe=describe, every=0.5)
    steps = wait_until(lambda: query(port, 'sum(sanoma_steps_total{workflow="refund",kind="call"})'),
                       within=HANG, what="the worker's steps", describe=describe, every=0.5)
    assert list(steps.values()) == [calls]  # written by the worker process
    assert list(query(port, 'sanoma_runs_started_total{workflow="refund"}').values()) == [1]  # by `start`
    assert query(port, "sanoma_runs_waiting") == {(("waiting_for", "approval"), ("workflow", "refund")): 1}
    assert query(port, "sanoma_approvals_pending") == {(("approver", "finance-lead"),): 1}
    assert query(port, "sanoma_policy_decisions_total") [(("decision", "approve"),)] == 1
    live = query(port, "sanoma_workers_live")
    assert live == {(("version", f"acme@{VERSION}"),): 1}  # the deploy version it runs
    assert query(port, "sanoma_queue_runnable") == {(): 0}
    everything = urllib.parse.urlencode({"query": '{__name__=~"sanoma_.*"}'})
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/query?{everything}", timeout=10) as answer:
        series = answer.read().decode()
    assert "sanoma_call_duration_seconds_bucket" in series
    assert run.id not in series  # no series carries a run id

    # Finance approves with `manage.py decide`: the worker wakes the run, which finishes. Prometheus
    # then sees the run's end and the wake's latency, written by the worker when its segment ended.
    decide = subprocess.run(
        [sys.executable, "manage.py", "decide", run.id, "approve", "--as", "finance-lead", "--note", "ok",
         "--timeout", "30"], cwd=REPO, env=site["env"], capture_output=True, text=True, timeout=HANG)
    assert decide.returncode == 0, decide.stdout + decide.stderr
    site["worker"].wait_for(lambda: Run.objects.filter(pk=run.pk, status="finished").first(), within=HANG,
                            what="the refund to finish once approved")
    ended = wait_until(lambda: query(port, 'sanoma_runs_ended_total{workflow="refund",outcome="finished"}'),
                       within=HANG, what="the run's end", describe=describe, every=0.5)
    assert list(ended.values()) == [1]
    woke = wait_until(lambda: query(port, "sanoma_wake_latency_seconds_count > 0"), within=HANG,
                      what="the wake's latency", describe=describe, every=0.5)
    assert list(woke.values()) == [1]  # one wake: the decision's, read by the worker
    latency = query(port, "sanoma_wake_latency_seconds_sum")
    assert 0 <= next(iter(latency.values())) < 30  # from the decision sent to the run going on
    assert query(port, "sanoma_approvals_pending") == {}  # decided: no series while none is pending
