"""On-demand workers for pinned deploy versions (wakeups/fleet.py), with real git.

- A real supervisor on the test's database (PostgreSQL, or SQLite where it polls) and a company
  root in a git repository of its own (a copy of the example company) with two commits: a run
  sleeping on the first commit's version is pinned when the second commit (without its workflow)
  is deployed; when it comes due the supervisor starts a worker for the old version from a
  worktree of the first commit, the run finishes there, that worker stops when idle, and the old
  version is retired and its worktree removed.
- Without a commit (deployed from uncommitted changes, or from outside git), or with a root no
  longer in git, the version's `worker_error` says why and no process starts (a version with no
  commit is not tried again); a version nothing holds is retired once, its worktree removed and
  its `worker_error` cleared.
"""
from __future__ import annotations

import dataclasses
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.test import override_settings

from runs.config.registry import get_config
from runs.engine import clock
from runs.models import AppVersion, LedgerKind, LedgerRecord, Run, RunStatus
from runs.version_states import VersionState, deploy_versions, runs_of_version
from runs.versions import UNCOMMITTED, describe_code
from wakeups.fleet import Fleet, checkout, worktree_of

pytestmark = [pytest.mark.django_db(transaction=True)]

PATIENCE = 120.0
GIT = ["git", "-c", "user.name=sanoma tests", "-c", "user.email=tests@example.com", "-c", "init.defaultBranch=main"]


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run([*GIT, "-C", str(cwd), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def company_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A git repository holding a copy of the example company at `company/`, committed once."""
    repo = tmp_path / "repo"
    root = repo / "company"
    shutil.copytree(Path(settings.BASE_DIR) / "company", root, ignore=shutil.ignore_patterns("__pycache__"))
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the company")
    return repo, root


def version_row(version: str, *, workflows: dict[str, str], minutes_ago: int, commit: str = "",
                root: str = "") -> AppVersion:
    at = clock.now() - timedelta(minutes=minutes_ago)
    return AppVersion.objects.create(version=version, first_started_at=at, promoted_at=at, commit=commit, root=root,
                                     workflows=workflows)


def run_on(run_id: str, workflow_version: str, *, status: str = RunStatus.QUEUED) -> Run:
    now = clock.now()
    return Run.objects.create(id=run_id, workflow=workflow_version.split("@")[0], app_version=workflow_version,
                              input={}, started_by="t", status=status, created_at=now, updated_at=now,
                              queued_at=now if status == RunStatus.QUEUED else None)


@pytest.fixture
def var_dir(tmp_path: Path) -> Any:
    var = tmp_path / "var"
    var.mkdir()
    with override_settings(VAR_DIR=var):
        yield var


def tend_once(fleet: Fleet) -> None:
    fleet.next_look = 0.0
    fleet.tend(quick=True)


def test_the_states_of_versions_and_the_runs_each_holds(var_dir: Path) -> None:
    version_row("acme@a", workflows={"refund": "refund@1", "report": "report@1"}, minutes_ago=30)
    version_row("acme@b", workflows={"refund": "refund@2", "report": "report@1"}, minutes_ago=20)
    version_row("acme@c", workflows={"refund": "refund@3", "report": "report@1"}, minutes_ago=10)
    run_on("pinned-1", "refund@1", status=RunStatus.WAITING)
    run_on("live-1", "report@1")
    run_on("live-2", "refund@3")
    states = {v.version: v for v in deploy_versions()}
    assert states["acme@c"].state is VersionState.LIVE and states["acme@c"].unfinished == 2
    assert states["acme@c"].runnable == 2
    assert states["acme@a"].state is VersionState.PINNED_ONLY and states["acme@a"].unfinished == 1
    assert states["acme@a"].runnable == 0  # waiting with no wake time: no worker needed yet
    assert states["acme@b"].state is VersionState.UNUSED
    # The run list's ?version=: the live deploy's workflow versions; an older one's pinned ones only.
    assert runs_of_version("acme@c") == ["refund@3", "report@1"]
    assert runs_of_version("acme@a") == ["refund@1"]
    assert runs_of_version("acme@b") == ["refund@2"]
    assert runs_of_version("acme@nope") == []


def test_a_version_with_no_commit_says_why_it_has_no_worker_and_nothing_starts(var_dir: Path) -> None:
    version_row("acme@old", workflows={"refund": "refund@1"}, minutes_ago=20, commit="", root="/nowhere")
    version_row("acme@new", workflows={"refund": "refund@2"}, minutes_ago=10)
    run_on("stuck", "refund@1")
    said: list[str] = []
    fleet = Fleet(say=said.append)
    tend_once(fleet)
    assert fleet.running == {} and said == []
    error = AppVersion.objects.get(version="acme@old").worker_error
    assert error.startswith("no commit was recorded for this version"), error
    assert error.endswith("runs pinned here can only be migrated (a patch marker), forked or cancelled"), error
    assert AppVersion.objects.get(version="acme@old").retired_at is None  # a run still needs it
    assert "acme@old" not in fleet.not_before  # never tried again: nothing would change


def test_a_version_deployed_from_uncommitted_changes_keeps_saying_so_and_gets_no_worker(
        var_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """What the user did: a deploy (`worker --reload`) from a root with an uncommitted edit, a run
    pinned there later. The row has no commit and says why; the fleet starts nothing, retries
    nothing, and leaves that sentence for the Versions page."""
    repo, root = company_repo(tmp_path)
    (root / "workflows" / "follow_up.py").write_text((root / "workflows" / "follow_up.py").read_text() + "\n# edit\n")
    config = dataclasses.replace(get_config(), root=root)
    described = describe_code(config)
    assert (described["commit"], described["worker_error"]) == ("", UNCOMMITTED)
    at = clock.now() - timedelta(minutes=20)
    AppVersion.objects.create(version="acme@dirty", first_started_at=at, promoted_at=at,
                              **{**described, "workflows": {"follow-up": "follow-up@1"}})
    version_row("acme@new", workflows={"follow-up": "follow-up@2"}, minutes_ago=10)
    run_on("pinned", "follow-up@1")
    said: list[str] = []
    fleet = Fleet(say=said.append)
    for _ in range(2):
        tend_once(fleet)
    assert fleet.running == {} and said == [] and "acme@dirty" not in fleet.not_before
    assert "trying again" not in caplog.text
    assert AppVersion.objects.get(version="acme@dirty").worker_error == UNCOMMITTED
    assert UNCOMMITTED.startswith("deployed from uncommitted changes: no commit holds this code")
    assert {v.version: v.worker_error for v in deploy_versions()}["acme@dirty"] == UNCOMMITTED


def test_a_root_no_longer_in_git_says_so(var_dir: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain" / "company"
    plain.mkdir(parents=True)
    version_row("acme@old", workflows={"refund": "refund@1"}, minutes_ago=20, commit="0" * 40, root=str(plain))
    version_row("acme@new", workflows={"refund": "refund@2"}, minutes_ago=10)
    run_on("stuck", "refund@1")
    fleet = Fleet(say=lambda text: None)
    tend_once(fleet)
    assert fleet.running == {}
    assert AppVersion.objects.get(version="acme@old").worker_error == \
        f"its config root {plain} is not in a git repository any more"


def test_a_commit_git_does_not_have_is_named(var_dir: Path, tmp_path: Path) -> None:
    repo, root = company_repo(tmp_path)
    with pytest.raises(Exception, match=f"commit {'1' * 40} is not in the repository {repo}"):
        checkout(commit="1" * 40, root=str(root))
    assert not worktree_of("1" * 40).exists()


def test_a_version_nothing_needs_is_retired_once_and_its_worktree_removed(var_dir: Path, tmp_path: Path) -> None:
    repo, root = company_repo(tmp_path)
    first = git(repo, "rev-parse", "HEAD")
    (root / "workflows" / "follow_up.py").unlink()
    git(repo, "commit", "-qam", "no follow-up")
    version_row("acme@old", workflows={"follow-up": "follow-up@1"}, minutes_ago=20, commit=first, root=str(root))
    version_row("acme@new", workflows={}, minutes_ago=10, commit=git(repo, "rev-parse", "HEAD"), root=str(root))
    tree = checkout(commit=first, root=str(root))
    assert tree == worktree_of(first) / "company" and (tree / "workflows" / "follow_up.py").is_file()
    assert str(worktree_of(first)) in git(repo, "worktree", "list")
    run_on("done-later", "follow-up@1", status=RunStatus.WAITING)
    AppVersion.objects.filter(version="acme@old").update(worker_error="its worker exited with status 1: boom")
    fleet = Fleet(say=lambda text: None)
    tend_once(fleet)
    assert AppVersion.objects.get(version="acme@old").retired_at is None  # the waiting run needs it
    Run.objects.filter(pk="done-later").update(status=RunStatus.FINISHED, ended_at=clock.now())
    tend_once(fleet)
    retired = AppVersion.objects.get(version="acme@old").retired_at
    assert retired is not None
    assert AppVersion.objects.get(version="acme@old").worker_error == ""  # retired: no worker problem shown
    assert not worktree_of(first).exists()
    assert str(worktree_of(first)) not in git(repo, "worktree", "list")
    tend_once(fleet)
    assert AppVersion.objects.get(version="acme@old").retired_at == retired  # never twice
    assert AppVersion.objects.get(version="acme@new").retired_at is None  # the live one never
    assert {v.version: v.state for v in deploy_versions()}["acme@old"] is VersionState.RETIRED


@pytest.mark.process
def test_a_commit_that_resolves_to_another_version_says_so_on_the_version(
        var_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A deploy made with uncommitted changes cannot be rebuilt from its commit: the worker refuses
    to start as that version, and the version's row says why."""
    from runs.tests.processes import database_url

    repo, root = company_repo(tmp_path)
    commit = git(repo, "rev-parse", "HEAD")
    version_row("acme@uncommitted", workflows={"follow-up": "follow-up@1"}, minutes_ago=20, commit=commit,
                root=str(root))
    version_row("acme@new", workflows={"follow-up": "follow-up@2"}, minutes_ago=10)
    run_on("pinned", "follow-up@1")
    (var_dir / "fakes").mkdir()
    for name, value in {"DATABASE_URL": database_url(connection.settings_dict), "SANOMA_VAR_DIR": str(var_dir),
                        "SANOMA_FAKES": "instance", "DJANGO_SETTINGS_MODULE": "sanoma_site.settings"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SANOMA_APP_VERSION", "must-not-reach-the-pinned-worker")
    said: list[str] = []
    fleet = Fleet(say=said.append)
    tend_once(fleet)
    assert list(fleet.running) == ["acme@uncommitted"], said
    fleet.running["acme@uncommitted"].process.wait(timeout=PATIENCE)
    tend_once(fleet)
    error = AppVersion.objects.get(version="acme@uncommitted").worker_error
    assert error.startswith("its worker exited with status 1: "), error
    assert "--pinned acme@uncommitted: this config root" in error and "not to the pinned version" in error, error
    assert fleet.running == {}  # tried again after RETRY_SECONDS, not at once
    tend_once(fleet)
    assert fleet.running == {}


# ---- the whole way, with real processes -----------------------------------------------------------


def _wait(condition: Callable[[], Any], *, what: str, describe: Callable[[], str]) -> Any:
    from runs.tests.processes import wait_until

    return wait_until(condition, within=PATIENCE, what=what, describe=describe, every=0.2)


@pytest.mark.process
def test_a_pinned_run_finishes_through_a_worker_of_its_own_commit(tmp_path: Path) -> None:
    from runs.testing import make_user
    from runs.tests.processes import REPO, database_url, group_members, worker_env

    repo, root = company_repo(tmp_path)
    first = git(repo, "rev-parse", "HEAD")
    var = tmp_path / "var"
    (var / "fakes").mkdir(parents=True)
    env = worker_env(db_url=database_url(connection.settings_dict), var_dir=var, version="", root=root,
                     SANOMA_WORKERS="1", SANOMA_IDLE_CHECK_SECONDS="0.5", SANOMA_IDLE_HORIZON_SECONDS="2")
    make_user("tester", groups=["staff"], perms=["runs.start_workflow"])

    def manage(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(REPO / "manage.py"), *args], cwd=REPO, env=env, text=True,
                              capture_output=True, timeout=180, stdin=subprocess.DEVNULL)

    # The first commit's version is deployed, and a run of follow-up sleeps on it.
    deployed = manage("worker", "--for-seconds", "0.5")  # a worker's start registers its deploy
    assert deployed.returncode == 0, deployed
    old = AppVersion.objects.get()
    assert old.commit == first and Path(old.root) == root.resolve(), (old.commit, old.root)
    started = manage("start", "follow-up", "--as", "tester", "--run-id", "pinned-run", "--set", "order_id=1001",
                     "--set", "after_seconds=12", "--here")
    assert Run.objects.get(pk="pinned-run").status == RunStatus.WAITING, started

    # The second commit has no follow-up: its deploy pins the run to the first commit's version.
    (root / "workflows" / "follow_up.py").unlink()
    git(repo, "commit", "-qam", "follow-up retired")
    log = tmp_path / "supervise.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen([sys.executable, str(REPO / "manage.py"), "supervise"], cwd=REPO, env=env,
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    worktree = var / "versions" / first
    pinned_log = var / "versions" / f"{first}.log"

    def describe() -> str:
        text = log.read_text(errors="replace")[-5000:]
        if pinned_log.exists():
            text += "\n--- the pinned worker ---\n" + pinned_log.read_text(errors="replace")[-4000:]
        return text

    try:
        _wait(lambda: AppVersion.objects.exclude(pk=old.pk).exists(), what="the second commit's deploy",
              describe=describe)
        _wait(lambda: "pinned worker" in log.read_text() and worktree.is_dir(), what="a worker for the old version",
              describe=describe)
        run = _wait(lambda: (r := Run.objects.get(pk="pinned-run")).ended_at and r, what="the pinned run to finish",
                    describe=describe)
        assert run.status == RunStatus.FINISHED, (run.error, describe())
        assert run.app_version in old.workflows.values()  # it stayed on its own code
        assert f"worker for {old.version} (pinned" in pinned_log.read_text(), describe()
        _wait(lambda: "stopped (idle)" in log.read_text(), what="the pinned worker to stop when idle",
              describe=describe)
        _wait(lambda: AppVersion.objects.get(pk=old.pk).retired_at is not None, what="the old version to retire",
              describe=describe)
        assert not worktree.exists(), describe()
        assert str(worktree) not in git(repo, "worktree", "list")
        assert AppVersion.objects.get(pk=old.pk).worker_error == ""
        # The second deploy said why it pinned the run (runs.deploys), once.
        pinned = LedgerRecord.objects.filter(run_id="pinned-run", kind=LedgerKind.RUN_PINNED)
        assert pinned.count() == 1 and "not in the new code" in pinned.get().body["reason"], list(
            pinned.values_list("body", flat=True))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        pids = [int(p) for p in re.findall(r"worker (\d+) started", log.read_text(errors="replace"))]
        for pid in pids:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert code == 0, describe()
    assert group_members(proc.pid) == []
