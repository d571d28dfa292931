"""Commands that wait for a run, with no worker to run it: `drift`, `plan`, `apply`, `start --wait`,
`decide`. Each is run as the docs say (`manage.py ...` in its own process, on the test database),
with and without a real `manage.py worker` beside it.

With no worker they say so at once, name the two ways on (`manage.py worker`, `--here`) and start
nothing; `--here` runs the run in the command's own process; a worker of another version is named;
a worker that goes away while a command follows its run stops the command, and the run is
cancelled (it had not begun) with the reason on its record.
"""
from __future__ import annotations

import subprocess
import sys
import threading

import pytest
from django.db import connection, connections
from django.utils import timezone

from changes import services
from company.vendors.shop import shop
from connectors.errors import SanomaError
from runs import presence
from runs.config.registry import set_config
from runs.config.resolution import SanomaConfig, resolve_config
from runs.models import LedgerKind, LedgerRecord, PresenceRole, Run, RunStatus, WorkerPresence
from runs.testing import make_user
from runs.tests.processes import REPO, Worker, database_url, worker_env
from runs.versions import register_version

COMPANY = REPO / "company"
SECRET = "whsec-no-worker-0123456789"
# Only turns a hang into a failure: the old commands waited 600 s for a worker that never came.
HANG = 60


@pytest.fixture
def site(transactional_db, tmp_path):
    """The example company on its fakes, the test database, and people who may start runs."""
    make_user("ops", groups=["staff"], perms=["runs.start_workflow"])
    make_user("alice", groups=["staff"], perms=["runs.start_workflow"])
    make_user("finance-lead", groups=["staff", "finance"], perms=["runs.start_workflow"])
    env = worker_env(db_url=database_url(connection.settings_dict), var_dir=tmp_path / "var", version="",
                     root=COMPANY, SHOP_WEBHOOK_SECRET=SECRET, SANOMA_WORKERS=1)
    return env


def manage(env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "manage.py"), *args], cwd=REPO, env=env, input=stdin,
                          capture_output=True, text=True, timeout=HANG)


def says_no_worker(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    text = done.stderr
    assert "no worker is running" in text, text
    assert "`manage.py worker`" in text and "--here" in text and "Nothing was started." in text, text
    return text


@pytest.mark.parametrize("command", [["drift"], ["plan"], ["apply", "--yes"]])
def test_drift_plan_and_apply_with_no_worker_say_so_and_start_nothing(site, command):
    done = manage(site, *command, "--as", "ops")
    text = says_no_worker(done)
    assert f"{command[0]} waits for a drift run" in text
    assert not Run.objects.exists()  # nothing left queued behind


def test_start_wait_with_no_worker_says_so_and_starts_nothing(site):
    done = manage(site, "start", "follow-up", "--as", "alice", "--set", "order_id=1001", "--wait", "30")
    text = says_no_worker(done)
    assert "--wait waits for the run's result" in text
    assert not Run.objects.exists()
    # Who may start comes first: an unknown starter is told that, not about workers.
    done = manage(site, "start", "follow-up", "--as", "nobody", "--set", "order_id=1001", "--wait", "30")
    assert done.returncode == 1 and "nobody" in done.stderr and "worker" not in done.stderr
    # Without --wait nothing waits: the run is queued for the next worker, and the command says so.
    done = manage(site, "start", "follow-up", "--as", "alice", "--set", "order_id=1001")
    assert done.returncode == 0, done.stderr
    run_id, status = done.stdout.split()
    assert status == "queued" and f"{run_id} is queued until a worker runs it: no worker is running" in done.stderr


def test_start_here_runs_the_run_in_the_command_and_decide_does_not_wait(site):
    done = manage(site, "start", "follow-up", "--as", "alice", "--set", "order_id=1001",
                  "--set", "after_seconds=0.5", "--here", "--wait", "30")
    assert done.returncode == 0, done.stderr
    run_id, status = done.stdout.splitlines()[0].split()
    assert status == "finished" and '"message_id"' in done.stdout
    assert Run.objects.get(pk=run_id).status == RunStatus.FINISHED
    # A run held for an approval is left waiting, said so, and a worker takes it on from there.
    done = manage(site, "start", "refund", "--as", "alice", "--set", "order_id=1001", "--set", "amount_cents=500",
                  "--here")
    assert done.returncode == 3, done.stderr
    run_id = done.stdout.split()[0]
    assert f"{run_id} is left waiting for approval approval-1 (finance-lead)" in done.stderr
    assert "`manage.py worker`" in done.stderr
    # Deciding it with no worker up does not wait out --timeout for the run to read the decision.
    done = manage(site, "decide", run_id, "approve", "--as", "finance-lead", "--timeout", "600")
    assert done.returncode == 0, done.stderr
    assert ("approval-1: sent; still pending: the run applies it when a worker runs, and no worker is running "
            "(start one: `manage.py worker`)") in done.stdout


def test_drift_here_needs_no_worker(site):
    done = manage(site, "drift", "--as", "ops", "--here")
    assert done.returncode == 2, done.stderr  # things are gone at the fresh fakes: exit 2, the report
    assert "gone     shop.product  tote" in done.stdout


def test_with_a_worker_the_commands_run_and_without_it_they_stop(site, tmp_path):
    worker = Worker(site, tmp_path / "worker.log")
    try:
        worker.start()
        assert WorkerPresence.objects.filter(role=PresenceRole.WORKER).count() == 1
        done = manage(site, "drift", "--as", "ops")
        assert done.returncode == 2, f"{done.stderr}\n{worker.describe()}"
        assert done.stdout.startswith("drift run drift-") and "gone     shop.product  tote" in done.stdout
        done = manage(site, "start", "follow-up", "--as", "alice", "--set", "order_id=1001",
                      "--set", "after_seconds=0", "--wait", "30")
        assert done.returncode == 0 and '"message_id"' in done.stdout, done.stderr
        # A run held for its approval past --wait is left waiting, said so with what it waits for.
        done = manage(site, "start", "refund", "--as", "alice", "--set", "order_id=1001", "--set", "amount_cents=500",
                      "--wait", "3")
        assert done.returncode == 3, f"{done.stdout}\n{done.stderr}"
        assert "is left waiting for approval approval-1 (finance-lead) after 3 s" in done.stderr, done.stderr
        assert worker.terminate() == 0
    finally:
        worker.cleanup()
    assert not WorkerPresence.objects.exists()  # a worker that stops takes its row with it
    says_no_worker(manage(site, "drift", "--as", "ops"))


def test_a_worker_of_another_version_is_named(site, tmp_path):
    worker = Worker({**site, "SANOMA_APP_VERSION": "old-code"}, tmp_path / "worker.log")
    try:
        worker.start()
        done = manage(site, "plan", "--as", "ops")
    finally:
        worker.cleanup()
    assert done.returncode == 1
    assert "no worker runs drift@" in done.stderr, done.stderr  # the drift workflow's version, on this code
    assert "runs acme@old-code, started before the workflows changed" in done.stderr
    assert "restart it (`manage.py worker`) on this code, or pass --here" in done.stderr
    assert not Run.objects.exists()


# ---- following a run whose worker goes away, in this process ---------------------------------------


@pytest.fixture
def acme(transactional_db, monkeypatch):
    monkeypatch.setenv("SHOP_WEBHOOK_SECRET", SECRET)
    config = resolve_config(SanomaConfig(app_name="acme", connectors=[shop], root=COMPANY), fakes="instance")
    set_config(config)
    # What a worker of this version records when it starts: the workflow versions it runs.
    register_version(version=config.version, promote=False, config=config)
    make_user("ops", groups=["staff"], perms=["runs.start_workflow"])
    yield config
    set_config(None)
    WorkerPresence.objects.all().delete()


def _leave_later(seconds: float) -> threading.Timer:
    def leave() -> None:
        try:
            presence.leave()
        finally:
            connections.close_all()

    timer = threading.Timer(seconds, leave)
    timer.start()
    return timer


def test_a_worker_that_goes_away_while_drift_follows_stops_it(acme):
    # This process says it is a worker of the config's version, and never advances anything: the
    # drift run stays queued, then the "worker" stops.
    presence.beat(role=PresenceRole.WORKER, version=acme.version)
    timer = _leave_later(1.0)
    try:
        with pytest.raises(SanomaError) as raised:
            services.drift(by="ops", config=acme, timeout=HANG)
    finally:
        timer.join()
    assert raised.value.code == "no_worker"
    run = Run.objects.get(workflow="drift")
    assert run.status == RunStatus.CANCELLED
    assert f"run {run.id} was cancelled before it began" in raised.value.message
    cancelled = LedgerRecord.objects.get(run_id=run.id, kind=LedgerKind.RUN_CANCELLED)
    assert cancelled.body["reason"].startswith("no worker ran it: no worker is running")


def test_drift_that_runs_out_of_time_cancels_its_run_and_says_so(acme):
    presence.beat(role=PresenceRole.WORKER, version=acme.version)  # up, but it never takes the run
    with pytest.raises(SanomaError) as raised:
        services.drift(by="ops", config=acme, timeout=0.5)
    run = Run.objects.get(workflow="drift")
    assert raised.value.code == "run_running" and run.status == RunStatus.CANCELLED
    assert f"has not ended within 0.5 s; run {run.id} was cancelled before it began" in raised.value.message


def test_a_worker_row_not_renewed_counts_as_gone(acme):
    presence.beat(role=PresenceRole.WORKER, version=acme.version)
    assert presence.worker_for(acme.version).ok
    # Its last beat long ago (a worker killed without stopping): on the database's clock it is gone.
    WorkerPresence.objects.update(seen_at="2000-01-01T00:00:00Z")
    found = presence.worker_for(acme.version)
    assert not found.ok and found.missing == "no worker is running"
    # A supervisor starts a worker when a run is queued: commands count on it.
    presence.beat(role=PresenceRole.SUPERVISOR)
    assert presence.worker_for(acme.version).ok


def test_a_new_process_removes_rows_of_processes_long_gone(acme):
    WorkerPresence.objects.create(name="old-host:1", role=PresenceRole.WORKER, host="old-host", pid=1,
                                  version=acme.version, started_at="2000-01-01T00:00:00Z",
                                  seen_at="2000-01-01T00:00:00Z")
    WorkerPresence.objects.create(name="other-host:2", role=PresenceRole.WORKER, host="other-host", pid=2,
                                  version=acme.version, started_at=timezone.now(), seen_at=timezone.now())
    presence.beat(role=PresenceRole.WORKER, version=acme.version)
    assert sorted(WorkerPresence.objects.values_list("host", flat=True)) == sorted(["other-host", presence.own_name()
                                                                                    .rpartition(":")[0]])
