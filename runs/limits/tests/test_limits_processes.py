"""Limits across real worker processes: 4 workers call a vendor's HTTP API (a local server that
refuses a request past 5 a second or past 2 at once, with 429 and Retry-After) through a connector
declaring `rate="5/s", concurrency=2`; and a keyed limit keeps one account's burst from delaying
another's calls.

On PostgreSQL the full 200 calls (about 42 s); on SQLite a smaller run of the same. Every wait is
bounded by progress (a loaded machine is slow, not failing); a failure prints the workers' output.
The figures (rate achieved, most at once) are printed; the bounds asserted are the limits' own.
"""
from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path

import pytest
from django.db import connection

from connectors.http.vendor_server import Answer, Received, VendorServer
from connectors.limits import parse_rate
from runs import services
from runs.config.resolution import ResolvedConfig, load_config
from runs.engine import clock
from runs.models import LedgerRecord, Run, RunStatus
from runs.testing import make_user
from runs.tests.processes import READY_LINE, Worker, database_url, worker_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.process]

ROOT = Path(__file__).resolve().parent / "limits_company"
REPO = Path(__file__).resolve().parents[3]
STARTER = "limits-tester"
VERSION = "limits-v1"
PATIENCE = 60.0  # seconds without progress before a wait fails
INTERVAL = parse_rate("5/s").interval


def _started(worker: Worker) -> bool:
    return READY_LINE in worker.output(all_runs=False)


class Site:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.db_url = database_url(connection.settings_dict)
        self.var = tmp / "var"
        self.var.mkdir(parents=True, exist_ok=True)
        self.workers: list[Worker] = []
        self.config: ResolvedConfig = load_config(ROOT, app_version=VERSION)
        make_user(STARTER, perms=["runs.start_workflow"])

    def start_workers(self, n: int, **env: object) -> list[Worker]:
        made = []
        for _ in range(n):
            log = self.tmp / f"worker-{len(self.workers)}.log"
            worker = Worker(worker_env(db_url=self.db_url, var_dir=self.var, version=VERSION, root=ROOT,
                                       SANOMA_FAKES="", **env), log)
            self.workers.append(worker)
            made.append(worker.start(ready_within=0))
        for worker in made:
            worker.wait_for(partial(_started, worker), within=PATIENCE, what="the worker to start")
        return made

    def start(self, workflow: str, input: dict) -> Run:
        return services.start(workflow=workflow, input=input, started_by=STARTER, config=self.config)

    def finish(self, runs: list[Run], seen: set[str] | None = None) -> None:
        """Wait until every run has finished (failing at once if one fails), noting what runs wait for."""
        ids = [r.id for r in runs]

        def ended() -> int:
            if seen is not None:
                seen.update(Run.objects.filter(id__in=ids, status=RunStatus.WAITING).values_list("waiting_for",
                                                                                                   flat=True))
            failed = Run.objects.filter(id__in=ids, status__in=[RunStatus.FAILED, RunStatus.CANCELLED]).first()
            assert failed is None, (failed.id, failed.error, self.describe())
            return Run.objects.filter(id__in=ids, status=RunStatus.FINISHED).count()

        self.workers[0].wait_for(lambda: ended() == len(ids), within=PATIENCE, progress=ended,
                                 what=f"{len(ids)} runs to finish", every=0.2)

    def describe(self) -> str:
        return "\n".join(w.describe() for w in self.workers)

    def cleanup(self) -> None:
        for worker in self.workers:
            worker.cleanup()


@pytest.fixture
def site(tmp_path: Path):
    made = Site(tmp_path)
    yield made
    made.cleanup()


def meter_server(*, gated: bool) -> VendorServer:
    """The vendor's API: each request takes 50 to 350 ms (so that, unlimited, three would now and then be
    under way at once); gated, it refuses past 5 a second or 2 at once, as the vendor documents."""
    server = VendorServer("meter")
    draw = random.Random(26)
    lock = threading.Lock()

    @server.route("POST", "/v1/pings")
    def ping(request: Received, params: dict[str, str]) -> Answer:
        with lock:
            took = draw.uniform(0.05, 0.35) if gated else 0.02
        time.sleep(took)
        body = request.json()
        return Answer(200, {"id": f"ping_{body['account']}_{body['n']}_{body['key']}"})

    if gated:
        server.gate(per_second=5, at_once=2, retry_after=1)
    return server


@pytest.mark.timing
def test_calls_from_four_workers_keep_to_5_a_second_and_2_at_once(site: Site) -> None:
    runs_n, calls_n = (20, 10) if connection.vendor == "postgresql" else (8, 5)
    with meter_server(gated=True) as server:
        site.start_workers(4, METER_URL=server.url)
        runs = [site.start("pings", {"calls": calls_n, "account": f"r{i}"}) for i in range(runs_n)]
        seen: set[str] = set()
        site.finish(runs, seen)
        arrived = sorted(r.at for r in server.requests_to("POST", "/v1/pings"))
        refused, most = server.refused, server.max_in_flight
    rate = (len(arrived) - 1) / (arrived[-1] - arrived[0])
    closest = min(b - a for a, b in zip(arrived, arrived[5:], strict=False))  # six calls' shortest span
    print(f"\n{len(arrived)} calls by 4 workers: {rate:.2f} a second (limit 5/s), six calls within {closest:.3f} s "
          f"at the closest, at most {most} at once (limit 2), {refused} refused; runs waited for: {sorted(seen)}")
    assert refused == 0, site.describe()
    assert len(arrived) == runs_n * calls_n  # each call once: none refused, none repeated
    assert most <= 2
    # Within 10 % of the limit on PostgreSQL, never past it. SQLite's single writer, shared by four
    # workers on a busy 2-core machine, holds a call's start back now and then; over its 40 calls one
    # such stall moves the rate more, so it is held to within 20 %.
    assert (4.5 if connection.vendor == "postgresql" else 4.0) <= rate <= 5.0
    # Whether a run suspends here ("rate limit of meter") or sleeps its wait out in place depends on
    # how many calls queue at once (a wait under a second is slept), which the machine's speed
    # decides; runs/limits/tests/test_waiting.py shows the durable wait itself, deterministically.
    assert seen <= {"rate limit of meter", "concurrency limit of meter"}, seen


@pytest.mark.timing
def test_one_accounts_burst_does_not_delay_another_accounts_calls(site: Site) -> None:
    """Each account has its own 5/s: three calls of account `b` take as long with account `a`'s
    burst of 15 calls going on as beside a burst of 15 runs that call nothing, within one interval.
    (Both bursts' runs are queued before b's, so the workers' own time to take them is in both
    figures alike; on a loaded machine it is more than an interval.)"""
    with meter_server(gated=False) as server:
        site.start_workers(4, METER_URL=server.url)

        def three_of(account: str, burst: int, burst_calls: int) -> tuple[float, list[float]]:
            bursts = [site.start("keyed-pings", {"account": f"a{account}", "calls": burst_calls})
                      for _ in range(burst)]
            began = time.monotonic()
            mine = [site.start("keyed-pings", {"account": account}) for _ in range(3)]
            site.finish(mine + bursts)
            got = sorted(r.at for r in server.requests_to("POST", "/v1/pings") if r.json()["account"] == account)
            theirs = sorted(r.at for r in server.requests_to("POST", "/v1/pings")
                            if r.json()["account"] == f"a{account}")
            return got[-1] - began, theirs

        site.finish([site.start("keyed-pings", {"account": "warm"})])  # the workers' first call is slow
        alone, _ = three_of("solo", burst=15, burst_calls=0)
        beside, burst = three_of("b", burst=15, burst_calls=1)
    print(f"\nthree calls of one account: {alone:.3f} s beside 15 runs calling nothing, {beside:.3f} s beside "
          f"another account's burst of 15 "
          f"(which took {burst[-1] - burst[0]:.2f} s); one interval is {INTERVAL:.3f} s")
    assert burst[-1] - burst[0] >= 14 * INTERVAL * 0.95  # the burst itself was held to its 5/s
    assert beside <= alone + INTERVAL


def test_a_429_with_retry_after_is_waited_out_durably_and_holds_the_limit_for_the_other_runs(site: Site) -> None:
    with meter_server(gated=False) as server:
        server.fault(status=429, body={"error": {"message": "Too many requests"}}, headers={"Retry-After": "4"})
        site.start_workers(2, METER_URL=server.url)
        hit = site.start("pings", {"calls": 1, "account": "first"})

        def waits_for(run: Run, what: str) -> bool:
            run.refresh_from_db()
            return run.status == RunStatus.WAITING and run.waiting_for == what

        site.workers[0].wait_for(lambda: waits_for(hit, "retry"), within=PATIENCE, what="the refused run to wait")
        assert hit.lease_owner == ""  # no worker holds it while it waits
        other = site.start("pings", {"calls": 1, "account": "second"})
        site.workers[0].wait_for(lambda: waits_for(other, "rate limit of meter"), within=PATIENCE,
                                 what="the other run to wait for the vendor's Retry-After")
        site.finish([hit, other])
        arrived = server.requests_to("POST", "/v1/pings")
    first = [r.at for r in arrived if r.json()["account"] == "first"]
    second = [r.at for r in arrived if r.json()["account"] == "second"]
    assert len(first) == 2 and first[1] - first[0] >= 4 - 0.1  # refused, then tried again after its 4 s
    assert len(second) == 1 and second[0] - first[0] >= 4 - 0.1  # the other run's call waited for it too
    kinds = list(LedgerRecord.objects.filter(run_id=hit.id).order_by("id").values_list("kind", flat=True))
    assert kinds.count("op.attempt_failed") == 1 and kinds[-2:] == ["op.called", "run.finished"], kinds
    failed = LedgerRecord.objects.get(run_id=hit.id, kind="op.attempt_failed").body
    assert failed["error"]["status"] == 429 and failed["wait_ms"] >= 4000


def test_raising_a_limit_with_the_command_lets_the_waiting_runs_go_at_once(site: Site) -> None:
    """Runs waiting their turns under 1/min go within seconds of an operator's `manage.py limits set
    meter --rate 100/s`, not at the turns the old limit gave them (the next a minute away)."""
    make_user("ops", perms=["runs.pause"])
    limits_set(site, "meter", "--rate", "1/min")
    with meter_server(gated=False) as server:
        site.start_workers(1, METER_URL=server.url)
        runs = [site.start("pings", {"calls": 1, "account": f"w{i}"}) for i in range(4)]

        def waiting() -> int:
            return Run.objects.filter(id__in=[r.id for r in runs], status=RunStatus.WAITING,
                                      waiting_for="rate limit of meter").count()

        site.workers[0].wait_for(lambda: waiting() == 3, within=PATIENCE, progress=waiting,
                                 what="three runs to wait for their turns under 1/min")
        turns = sorted(t for t in Run.objects.filter(id__in=[r.id for r in runs], status=RunStatus.WAITING)
                       .values_list("wake_at", flat=True) if t is not None)
        raised = time.monotonic()
        said = limits_set(site, "meter", "--rate", "100/s")
        assert said == "meter: 100/s, 2 at once from the next call"
        site.finish(runs)
        took = time.monotonic() - raised
        arrived = len(server.requests_to("POST", "/v1/pings"))
    print(f"\nthe three waiting runs finished {took:.2f} s after the limit was raised (their old turns: "
          f"{', '.join(f'{(t - turns[0]).total_seconds():.0f} s' for t in turns)} apart)")
    assert arrived == 4 and len(turns) == 3
    # Under the old limit the first of them would have waited about a minute, the last three.
    assert clock.now() < turns[0]  # all finished before the first of the old turns came


def limits_set(site: Site, *args: str) -> str:
    """`manage.py limits set <args> --as ops`, as an operator types it; what it prints."""
    done = subprocess.run([sys.executable, str(REPO / "manage.py"), "limits", "set", *args, "--as", "ops"],
                          cwd=REPO, env=worker_env(db_url=site.db_url, var_dir=site.var, version=VERSION, root=ROOT,
                                                   SANOMA_FAKES=""),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()
