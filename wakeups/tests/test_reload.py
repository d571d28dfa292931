"""`manage.py worker --reload` as a real process: an edit to a workflow file under the config root
stops the worker and starts another on the new code, whose deploy says it migrated the parked run
and which advances a new run of the edited workflow with no restart by hand; a broken edit leaves
the parent waiting for the next save; `--reload` with `--stop-when-idle` is refused.

The config root is a copy of the example company in the test's tmp dir (its folder named
`company`, as the demo's is); runs are started by `manage.py start` in a process of its own, so the
edited code is resolved there, never in this one.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from runs.models import Run, RunStatus
from runs.testing import make_user
from runs.tests.processes import REPO, database_url, group_members, wait_until, worker_env
from wakeups.reload import changes, snapshot

PATIENCE = 90.0
STARTER = "reload-tester"


def copy_company(into: Path) -> Path:
    root = into / "company"
    shutil.copytree(Path(settings.BASE_DIR) / "company", root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def manage(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "manage.py"), *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_the_snapshot_sees_an_edit_an_added_and_a_removed_file_and_skips_caches(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "workflows" / "__pycache__").mkdir(parents=True)
    (root / "workflows" / "a.py").write_text("A = 1\n")
    (root / "policies").mkdir()
    (root / "policies" / "p.cedar").write_text("permit(principal, action, resource);\n")
    (root / "workflows" / "__pycache__" / "a.cpython-312.pyc").write_bytes(b"x")
    (root / "var").mkdir()
    (root / "var" / "state.json").write_text("{}")
    before = snapshot(root, skip=[root / "var"])
    assert sorted(before) == ["policies/p.cedar", "workflows/a.py"]
    (root / "workflows" / "a.py").write_text("A = 22\n")  # another size: seen whatever the clock's grain
    (root / "workflows" / "b.py").write_text("B = 1\n")
    (root / "policies" / "p.cedar").unlink()
    (root / "workflows" / "__pycache__" / "a.cpython-312.pyc").write_bytes(b"yy")
    (root / "var" / "state.json").write_text('{"a": 1}')
    assert changes(before, snapshot(root, skip=[root / "var"])) == [
        "policies/p.cedar", "workflows/a.py", "workflows/b.py"]


@pytest.mark.process
def test_reload_with_stop_when_idle_is_refused_and_starts_nothing(tmp_path: Path) -> None:
    env = worker_env(db_url="sqlite://" + str(tmp_path / "unused.sqlite3"), var_dir=tmp_path / "var", version="",
                     root=Path(settings.BASE_DIR) / "company")
    done = manage(env, "worker", "--reload", "--stop-when-idle")
    assert done.returncode == 2, done
    assert "--reload cannot be combined with --stop-when-idle" in done.stderr
    assert "worker started" not in done.stdout
    done = manage(env, "worker", "--reload", "--pinned", "acme@0")
    assert done.returncode == 2 and "--reload cannot be combined with --pinned" in done.stderr, done


@pytest.mark.process
@pytest.mark.django_db(transaction=True)
def test_an_edited_workflow_runs_on_the_new_code_without_a_restart_by_hand(tmp_path: Path) -> None:
    root = copy_company(tmp_path)
    var = tmp_path / "var"
    (var / "fakes").mkdir(parents=True)
    env = worker_env(db_url=database_url(connection.settings_dict), var_dir=var, version="", root=root,
                     SANOMA_WORKERS="1")
    make_user(STARTER, groups=["staff"], perms=["runs.start_workflow"])
    log = tmp_path / "reload.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen([sys.executable, str(REPO / "manage.py"), "worker", "--reload"], cwd=REPO, env=env,
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)

    def output() -> str:
        return log.read_text(errors="replace")

    def wait_for(condition: Callable[[], Any], what: str) -> Any:
        return wait_until(condition, within=PATIENCE, what=what, describe=lambda: output()[-6000:])

    def finished(run_id: str) -> Run | None:
        run = Run.objects.filter(pk=run_id).first()
        return run if run is not None and run.status in (RunStatus.FINISHED, RunStatus.FAILED) else None

    def follow_up(run_id: str, after_seconds: int) -> None:
        started = manage(env, "start", "follow-up", "--as", STARTER, "--run-id", run_id, "--set", "order_id=1001",
                         "--set", f"after_seconds={after_seconds}")
        assert started.returncode == 0, started

    try:
        wait_for(lambda: output().count("worker started:") == 1, "the first worker to start")
        follow_up("parked", 3600)  # sleeps through the edit
        wait_for(lambda: Run.objects.filter(pk="parked", status=RunStatus.WAITING).exists(), "the run to park")
        follow_up("before-edit", 0)
        before = wait_for(lambda: finished("before-edit"), "the run before the edit to end")
        assert before.status == RunStatus.FINISHED and "edited" not in before.result, before.error

        # An edit after the point where the parked run sleeps: the new worker's deploy migrates it.
        workflow = root / "workflows" / "follow_up.py"
        workflow.write_text(workflow.read_text().replace(
            '"asked_at": ctx.now().isoformat()}', '"asked_at": ctx.now().isoformat(), "edited": True}'))
        wait_for(lambda: "follow_up.py changed" in output() and output().count("worker started:") == 2,
                 "the worker to start again on the edit")
        assert re.search(r"deploy \S+: migrated 1 run\(s\): parked, pinned 0", output()), output()
        follow_up("after-edit", 0)
        after = wait_for(lambda: finished("after-edit"), "the run after the edit to end, with no restart by hand")
        assert after.status == RunStatus.FINISHED, after.error
        assert after.result["edited"] is True
        assert after.app_version != before.app_version
        assert Run.objects.get(pk="parked").app_version == after.app_version  # migrated onto the edit
        assert proc.poll() is None, output()

        # A broken edit: the worker cannot start; the parent says so and waits for the next save.
        edited = workflow.read_text()
        workflow.write_text(edited + "\ndef broken(:\n")
        wait_for(lambda: "the worker exited with status" in output(), "the broken worker to exit")
        assert proc.poll() is None, output()
        workflow.write_text(edited)
        wait_for(lambda: output().count("worker started:") == 3, "a worker on the mended file")

        first, second = [int(p) for p in _started_pids(output())[:2]]
        assert group_members(first) == []  # the first worker and its cluster are gone
        assert second != first
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        for pid in _started_pids(output()):
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert code == 0, output()
    assert "worker --reload stopped" in output()
    deadline = time.monotonic() + 10
    while any(group_members(pid) for pid in _started_pids(output())) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(group_members(pid) == [] for pid in _started_pids(output())), output()


def _started_pids(text: str) -> list[int]:
    return [int(p) for p in re.findall(r"worker --reload: worker (\d+) started", text)]
