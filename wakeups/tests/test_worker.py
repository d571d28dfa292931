"""`manage.py worker` as a real process: sleepers wake after their deadline, other versions are left
alone, and SIGTERM stops it cleanly.

Each worker runs on the database pytest-django made for the test (`transaction=True`; see
`worker_company/harness.py` for how the child finds it) and on the config root
`wakeups/tests/worker_company/`, with its fakes in the test's tmp dir. Every wait is bounded, and a
failure prints the worker's output.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django_q.models import OrmQ

from runs import services
from runs.config.resolution import ResolvedConfig, load_config
from runs.engine import clock
from runs.models import AppVersion, LedgerRecord, Run, RunStatus, Step, StepKind
from runs.testing import make_user
from runs.tests.processes import worker_env as _env
from wakeups.tests.worker_company.harness import ROOT, Worker, database_url, group_members, worker_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.process]

STARTER = "worker-tester"
# Bounds on waits: they only turn a hang into a failure (waits for a count use it as the longest
# time without progress), so they are generous: a loaded machine is slow, not failing.
PATIENCE = 60.0


class Site:
    """The test's database, fake dir and worker factory; every worker is killed at teardown."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.db_url = database_url(connection.settings_dict)
        self.var = tmp_path / "var"
        (self.var / "fakes").mkdir(parents=True, exist_ok=True)
        self.workers: list[Worker] = []
        self._configs: dict[str, ResolvedConfig] = {}
        make_user(STARTER, perms=["runs.start_workflow"])

    def config(self, version: str) -> ResolvedConfig:
        if version not in self._configs:
            self._configs[version] = load_config(ROOT, fakes="instance", fake_dir=self.var / "fakes",
                                                 app_version=version)
        return self._configs[version]

    def worker(self, version: str, *args: str, **env: object) -> Worker:
        log = self.tmp / f"worker-{version}-{len(self.workers)}.log"
        worker = Worker(worker_env(db_url=self.db_url, var_dir=self.var, version=version, **env), log, args)
        self.workers.append(worker)
        return worker

    def start(self, version: str, workflow: str, input: dict, run_id: str) -> Run:
        return services.start(workflow=workflow, input=input, started_by=STARTER, run_id=run_id,
                              config=self.config(version))

    def cleanup(self) -> None:
        for worker in self.workers:
            worker.cleanup()


@pytest.fixture
def site(tmp_path: Path):
    made = Site(tmp_path)
    yield made
    made.cleanup()


def test_a_sleeping_run_resumes_after_its_deadline_never_before(site: Site) -> None:
    """Behaviour only: how soon after its deadline a run resumes is a figure, measured and printed
    by bench/engine.py (f), not asserted here, where a loaded machine would make it flake."""
    worker = site.worker("v1").start()
    # Each nap sleeps for a while from the moment it reaches its sleep, so its deadline is ahead of
    # it however slow the machine is; the deadlines, spread over a second, come due while the
    # worker is idle, and only the sweep can wake the runs.
    naps = {f"nap-{i}": 1500 + i * 250 for i in range(5)}
    for run_id, after_ms in naps.items():
        site.start("v1", "nap", {"after_ms": after_ms}, run_id)

    def finished() -> int:
        return Run.objects.filter(id__in=naps, status=RunStatus.FINISHED).count()

    worker.wait_for(lambda: finished() == len(naps), within=PATIENCE, progress=finished, what="the naps to finish")
    assert not Run.objects.filter(id__in=naps).exclude(status=RunStatus.FINISHED).exists()
    effects = [e["run"] for e in site.config("v1").fakes["tally"].state["effects"]]
    for run_id, after_ms in naps.items():
        run = Run.objects.get(id=run_id)
        # Step 1 is the sleep: its deadline, `after_ms` from the moment the run reached it.
        slept = Step.objects.get(run_id=run_id, seq=1)
        assert isinstance(slept.output, dict), (run_id, slept.output)
        until = slept.output["until"]
        assert slept.kind == StepKind.SLEEP and until - after_ms <= clock.to_ms(slept.created_at) < until, run_id
        # It went to sleep and was queued again by the sweep once its deadline had passed.
        assert run.queued_at is not None and run.queued_at >= clock.from_ms(until), (run_id, run.queued_at, until)
        # Step 2, ctx.now() right after the sleep, is the moment it resumed: never before the deadline.
        resumed = Step.objects.get(run_id=run_id, seq=2).output
        assert isinstance(resumed, dict), (run_id, resumed)
        woke = resumed["at"]
        assert woke >= until, (run_id, woke, until)
        # The ledger, in the order written: started, asleep, then (after the deadline) the call, the end.
        records = list(LedgerRecord.objects.filter(run_id=run_id).order_by("id").values_list("kind", "seq", "at"))
        kinds = [kind for kind, _, _ in records]
        assert kinds == ["run.started", "sleep.started", "op.called", "run.finished"], (run_id, records)
        assert [seq for _, seq, _ in records] == sorted(seq for _, seq, _ in records), (run_id, records)
        assert all(at >= until for kind, _, at in records if kind in ("op.called", "run.finished")), (run_id, records)
        assert effects.count(run_id) == 1, (run_id, effects)  # its call after the sleep took effect once
        assert run.ended_at is not None and run.ended_at >= clock.from_ms(until), (run_id, run.ended_at, until)
    assert worker.terminate() == 0, worker.describe()


def test_a_worker_process_migrates_runs_of_another_version_at_start_and_leaves_later_ones_alone(site: Site) -> None:
    # A run queued on version A before the version-B worker starts: its deploy proves it (the same
    # code, nothing recorded yet) and moves it, and the worker runs it.
    moved = site.start("version-a", "five-posts", {"label": "A"}, "run-on-a")
    worker = site.worker("version-b").start()
    assert "migrated 1 run(s): run-on-a, pinned 0" in worker.output(), worker.describe()
    worker.wait_for(lambda: Run.objects.filter(id="run-on-a", status=RunStatus.FINISHED).exists(), within=PATIENCE,
                    what="the migrated run to finish")
    moved.refresh_from_db()
    assert moved.app_version == "five-posts@version-b"
    assert list(LedgerRecord.objects.filter(run_id="run-on-a", kind="run.migrated").values_list("body", flat=True)) \
        == [{"from": "five-posts@version-a", "to": "five-posts@version-b", "steps": 0,
             "deploy": "worker-company@version-b"}]
    # A run started on version A's code once B is up (a client on old code) is left alone until a deploy.
    stranger = site.start("version-a", "five-posts", {"label": "A2"}, "late-on-a")
    site.start("version-b", "five-posts", {"label": "B"}, "run-on-b")
    worker.wait_for(lambda: Run.objects.filter(id="run-on-b", status=RunStatus.FINISHED).exists(), within=PATIENCE,
                    what="version B's own run to finish")
    # Its task was enqueued first; once the broker's queue is empty, the worker has had it and let it be.
    worker.wait_for(lambda: not OrmQ.objects.exists(), within=PATIENCE, what="the broker queue to empty")
    time.sleep(1.0)  # a few sweeps: none may touch it either
    stranger.refresh_from_db()
    assert (stranger.status, stranger.lease_owner, stranger.app_version) == (
        RunStatus.QUEUED, "", "five-posts@version-a")
    assert "leaving run late-on-a alone: it runs version five-posts@version-a" in worker.output(), worker.describe()
    assert not Step.objects.filter(run_id="late-on-a").exists()
    assert list(LedgerRecord.objects.filter(run_id="late-on-a").values_list("kind", flat=True)) == ["run.started"]
    assert not [e for e in site.config("version-a").fakes["tally"].state["effects"] if e["run"] == "late-on-a"]
    assert worker.terminate() == 0, worker.describe()


def test_an_older_worker_process_warns_unless_promoted(site: Site) -> None:
    # A first, then B (the latest); A again warns; A with --promote becomes the latest.
    def once(version: str, *args: str) -> str:
        worker = site.worker(version, "--for-seconds", "0.1", *args)
        worker.start()
        assert worker.proc is not None
        code = worker.proc.wait(timeout=PATIENCE)
        assert code == 0, worker.describe()
        return worker.output()

    assert "older than the latest" not in once("old")
    assert "older than the latest" not in once("new")
    warned = once("old")
    assert "This worker runs worker-company@old, older than the latest worker-company@new" in warned, warned
    assert "--promote" in warned
    promoted = once("old", "--promote")
    assert "older than the latest" not in promoted, promoted
    latest = AppVersion.objects.order_by("-promoted_at").values_list("version", flat=True).first()
    assert latest == "worker-company@old"


def test_sigterm_stops_the_worker_cleanly(site: Site) -> None:
    # A slow call (300 ms after each effect) keeps a run in flight when the signal comes.
    worker = site.worker("v1", TALLY_AFTER_MS=300).start()
    fake = site.config("v1").fakes["tally"]
    site.start("v1", "five-posts", {"label": "term"}, "in-flight")
    worker.wait_for(lambda: fake.state["effects"], within=PATIENCE, what="the run's first effect")
    code = worker.terminate(within=PATIENCE)
    assert code == 0, worker.describe()
    assert worker.pgid is not None
    left = group_members(worker.pgid)
    assert not left, f"processes left in the worker's group: {left}"
    output = worker.output()
    assert "worker stopping" in output and "Traceback" not in output, worker.describe()
    # The segment in flight was allowed to end: the run is not left running under a dead lease.
    run = Run.objects.get(id="in-flight")
    assert run.status in (RunStatus.FINISHED, RunStatus.QUEUED), (run.status, worker.describe())
    assert run.lease_owner == ""
    print(f"\nSIGTERM: exit {code}; the in-flight run is {run.status}")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_the_whole_group_stops_the_worker_within_its_grace(site: Site, signum: int) -> None:
    """systemd's default (KillMode=control-group) and a shell's Ctrl-C signal every process of the
    worker, its cluster's too: the worker still stops, within SANOMA_WORKER_STOP_SECONDS."""
    worker = site.worker("v1", TALLY_AFTER_MS=300).start()
    fake = site.config("v1").fakes["tally"]
    site.start("v1", "five-posts", {"label": "group"}, "in-flight")
    worker.wait_for(lambda: fake.state["effects"], within=PATIENCE, what="the run's first effect")
    began = time.monotonic()
    code = worker.terminate_group(signum, within=settings.SANOMA_WORKER_STOP_SECONDS + 5)
    took = time.monotonic() - began
    assert code == 0, worker.describe()
    assert worker.pgid is not None
    ends = time.monotonic() + 5
    while group_members(worker.pgid) and time.monotonic() < ends:
        time.sleep(0.05)
    assert not group_members(worker.pgid), f"processes left in the worker's group\n{worker.describe()}"
    assert "worker stopping" in worker.output(), worker.describe()
    print(f"\n{signal.Signals(signum).name} to the group: exit {code} after {took:.1f} s")


GRACE = 15  # SANOMA_WORKER_STOP_SECONDS of the worker the sentinel is held in


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def test_a_group_signal_the_cluster_meets_late_still_stops_the_worker(site: Site) -> None:
    """On a loaded machine the worker may act on a group SIGTERM before its cluster's sentinel
    does: the sentinel then ends while the worker is telling it to stop, and would never answer.
    Here that order is made sure of: the sentinel is held (SIGSTOP) while the worker gets SIGTERM,
    and the group's SIGTERM reaches it once the worker says it is stopping. The worker must still
    exit within its grace."""
    worker = site.worker("v1", SANOMA_WORKER_STOP_SECONDS=GRACE).start()
    assert worker.proc is not None and worker.pgid is not None
    # The sentinel: the worker's child that has the cluster's processes below it.
    sentinel = max(_children(worker.proc.pid), key=lambda pid: len(_children(pid)))
    assert _children(sentinel), worker.describe()
    os.kill(sentinel, signal.SIGSTOP)
    try:
        worker.proc.send_signal(signal.SIGTERM)
        worker.wait_for(lambda: "worker stopping" in worker.output(), within=PATIENCE, what="worker stopping")
        time.sleep(0.5)  # the worker is telling the held sentinel to stop now
    finally:
        os.killpg(worker.pgid, signal.SIGTERM)  # the group's signal, which the sentinel meets once let go
        os.kill(sentinel, signal.SIGCONT)
    try:
        code = worker.proc.wait(timeout=GRACE + 10)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the worker did not stop within its grace\n{worker.describe()}") from None
    assert code == 0, worker.describe()
    assert "the cluster's processes had already stopped (the signal reached them too)" in worker.output(), \
        worker.describe()
    ends = time.monotonic() + 5
    while group_members(worker.pgid) and time.monotonic() < ends:
        time.sleep(0.05)
    assert not group_members(worker.pgid), f"processes left in the worker's group\n{worker.describe()}"


def test_the_banner_names_the_policy_loaded_so_a_new_one_shows(site: Site) -> None:
    """The banner names the policy the worker loaded, with its own version; the deploy version
    covers the policy too (every workflow's version does), so it changes with the policy."""
    root = site.tmp / "company" / "worker_company"
    shutil.copytree(ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))

    def banner() -> str:
        worker = Worker(_env(db_url=site.db_url, var_dir=site.var, version="", root=root),
                        site.tmp / f"banner-{len(site.workers)}.log", ("--for-seconds", "0.1"))
        site.workers.append(worker)
        worker.start()
        assert worker.proc is not None and worker.proc.wait(timeout=PATIENCE) == 0, worker.describe()
        return next(line for line in worker.output().splitlines() if line.startswith("worker for "))

    before = banner()
    assert before.endswith("; no policy (every call is allowed)"), before
    (root / "policies").mkdir()
    (root / "policies" / "tally.cedar").write_text(
        'permit(principal, action, resource);\n\nforbid(principal, action in Action::"money", resource);\n')
    after = banner()
    version = before.split(":")[0]
    assert not after.startswith(version + ":"), (before, after)  # a policy edit is a new deploy version
    assert re.search(r"; policy policy@[0-9a-f]{16} \(1 file, 2 policies\)$", after), after
    (root / "policies" / "tally.cedar").write_text('permit(principal, action, resource);\n')
    changed = banner()
    assert re.search(r"; policy policy@[0-9a-f]{16} \(1 file, 1 policy\)$", changed), changed
    assert changed.split("; policy ")[1].split()[0] != after.split("; policy ")[1].split()[0]


def _commits() -> int:
    """The test database's committed transactions so far, every backend (this one's flushed first)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
        return int(cursor.fetchone()[0])


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the worker waits on NOTIFYs on PostgreSQL")
def test_an_idle_worker_makes_less_than_a_transaction_a_second(site: Site) -> None:
    """Nothing queued, nothing sleeping: the pusher's take every few seconds, a beat every 5 s and a
    sweep pass every 10 s (0.65 a second as measured; 3.7 when the pusher polled every second, each
    take after a `SELECT 1`, and the loop swept every 2 s). A window of 10 s, read after the
    backends' own counts have been flushed (about a second after each goes idle)."""
    # The site's default lease (the tests' 3 s one makes the worker beat every second: a beat at
    # least three times a lease, so `health --worker` never finds a live worker's beat too old).
    site.worker("v1", SANOMA_WORKERS="2", SANOMA_LEASE_SECONDS="30").start(ready_within=PATIENCE)
    time.sleep(5.0)  # the start's own work (the cluster's processes, the first pass) done
    windows = []
    for _ in range(3):  # on a loaded machine the start's work can outlast 5 s: the next window is idle
        first = _commits()
        time.sleep(10.0)
        time.sleep(1.5)  # the last transactions' counts flushed
        windows.append(_commits() - first - 3)  # this test's own three reads
        if windows[-1] <= 11:
            break
    assert min(windows) <= 11, f"{windows} transactions in windows of 11.5 s of an idle worker"
