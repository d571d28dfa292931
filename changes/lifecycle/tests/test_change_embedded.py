"""A change on the embedded git remote, advanced in this process: checks that fail wait for a push
(`wait_for_push`), the push's `pushed` message brings the new head's checks, and a change whose
checks fail without waiting ends `checks_failed` naming the file."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from changes.lifecycle.models import ChangeRun
from changes.lifecycle.services import notify, open_change
from changes.lifecycle.tests.gitco import git, gitco_site, push
from runs.config.resolution import ResolvedConfig
from runs.engine.drain import drain
from runs.models import Approval, Run, RunStatus


@pytest.fixture
def site(tmp_path: Path, db) -> Iterator[tuple[Path, Path, ResolvedConfig]]:
    with gitco_site(tmp_path) as made:
        yield made


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

    fixed = push(clone, "hello", {"workflows/hello.py": "# nothing to run yet\n"}, "Hello, fixed", base=None)
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
