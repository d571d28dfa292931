"""A change on the embedded git remote, advanced in this process: checks that fail wait for a push
(`wait_for_push`), the push's `pushed` message brings the new head's checks, and a change whose
checks fail without waiting ends `checks_failed` naming the file."""
from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from changes.lifecycle.models import ChangeRun
from changes.lifecycle.remotes.git_setup import init_embedded
from changes.lifecycle.services import notify, open_change
from changes.lifecycle.tests.gitco import use, write_root
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig
from runs.engine.drain import drain
from runs.models import Approval, Run, RunStatus

GIT = {"GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com", "GIT_COMMITTER_NAME": "Dev",
       "GIT_COMMITTER_EMAIL": "dev@example.com"}


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT}).stdout.strip()


@pytest.fixture
def site(tmp_path: Path, db) -> Iterator[tuple[Path, Path, ResolvedConfig]]:
    root = write_root(tmp_path / "site")
    remote = tmp_path / "gitco.git"
    init_embedded(root, remote)
    clone = tmp_path / "clone"
    git("clone", "--quiet", str(remote), str(clone), cwd=tmp_path)
    config = use(root, tmp_path / "fakes")
    try:
        yield remote, clone, config
    finally:
        set_config(None)


def push(clone: Path, branch: str, files: dict[str, str], message: str) -> str:
    git("checkout", "--quiet", "-B", branch, cwd=clone)
    for name, text in files.items():
        (clone / name).write_text(text)
    git("add", "-A", cwd=clone)
    git("commit", "--quiet", "-m", message, cwd=clone)
    git("push", "--quiet", "origin", branch, cwd=clone)
    return git("rev-parse", "HEAD", cwd=clone)


def test_failed_checks_wait_for_a_push_and_check_the_new_head(site) -> None:
    remote, clone, config = site
    broken = push(clone, "hello", {"workflows/hello.py": "import no_such_module_here\n"}, "Hello, broken")
    run = open_change(branch="hello", title="Say hello", url=str(remote), wait_for_push=3600, by="alice",
                      config=config)
    drain(config)
    run.refresh_from_db()
    change = ChangeRun.objects.get(pk=run.id)
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "message"), (run.status, run.waiting_for)
    assert change.state == "checks_failed" and change.head_sha == broken
    [config_check] = [c for c in change.checks["checks"] if c["name"] == "config"]
    assert not config_check["ok"] and config_check["problems"][0]["file"] == "workflows/hello.py"

    fixed = push(clone, "hello", {"workflows/hello.py": "# nothing to run yet\n"}, "Hello, fixed")
    assert notify(topic="pushed", branch="hello", sha=fixed, via="the test's hook") == [run.id]
    drain(config)
    run.refresh_from_db()
    change.refresh_from_db()
    assert change.head_sha == fixed and change.checks["ok"], change.checks
    assert Approval.objects.get(run_id=run.id, status="pending").op == "sanoma.change.merge"
    assert git("rev-parse", "main", cwd=remote) != fixed  # held: nothing merged


def test_failed_checks_without_waiting_end_the_change_naming_the_file(site) -> None:
    remote, clone, config = site
    push(clone, "oops", {"workflows/oops.py": "def broken(:\n"}, "Oops")
    run = open_change(branch="oops", title="Oops", url=str(remote), by="alice", config=config)
    drain(config)
    run = Run.objects.get(pk=run.id)
    error = run.error or {}
    assert (run.status, error.get("code")) == (RunStatus.FAILED, "checks_failed"), error
    assert "workflows/oops.py" in error["message"]
    assert ChangeRun.objects.get(pk=run.id).state == "checks_failed"
