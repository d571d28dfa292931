"""The recovery commands: rerun (one, or in bulk), fork, pause and unpause, runs filtered by tag."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from connectors import DriverError
from runs.models import Pause, Run, RunStatus
from runs.testing import make_user
from runs.tests.fixtures import TAGGED_FLOW

flow = TAGGED_FLOW


@pytest.fixture
def engine(engine_for, db):
    make_user("ops", perms=["runs.view_any_run", "runs.operate_runs", "runs.rerun_runs", "runs.pause"])
    return engine_for(flow)


def run_command(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def failed(engine, label: str) -> Run:
    engine.fake.fail_next("acme.mail.send", DriverError("mail down", retryable=False))
    return engine.run("flow", {"label": label})


def test_rerun_one_and_in_bulk(engine):
    one = failed(engine, "a")
    with pytest.raises(CommandError, match="not rerun: confirm with --yes"):
        call_command("rerun", one.id, "--as", "ops", stdout=StringIO())
    assert not Run.objects.filter(source_run=one.id).exists()
    out = run_command("rerun", one.id, "--yes", "--as", "ops")
    assert out.splitlines()[-1] == f"{one.id}~1 queued (rerun of {one.id})"
    failed(engine, "b")
    failed(engine, "c")
    engine.drain()  # the first rerun finishes
    out = run_command("rerun", "--workflow", "flow", "--error-code", "driver_failed", "--yes", "--as", "ops")
    lines = out.splitlines()
    assert lines[0] == "3 failed run(s) match" and lines[-1].startswith("rerun 3 of 3:")
    assert all(line.endswith("calls again acme.post.publish [publish], acme.mail.send [send]") for line in lines[1:4])
    with pytest.raises(CommandError, match="confirm with --yes"):
        call_command("rerun", "--workflow", "flow", "--as", "ops", stdout=StringIO())
    with pytest.raises(CommandError, match="not both"):
        call_command("rerun", one.id, "--workflow", "flow", "--as", "ops")
    with pytest.raises(CommandError, match=r"may not rerun or fork runs.*\[permission_denied\]"):
        call_command("rerun", one.id, "--as", "alice")


def test_fork_from_a_step(engine):
    source = failed(engine, "f")
    assert run_command("fork", source.id, "--from", "3", "--yes", "--as", "ops").splitlines()[-1] == (
        f"{source.id}~1 queued (fork of {source.id} from step 3)")
    with pytest.raises(CommandError, match="has no step 7; its steps are 1, 2, 3"):
        call_command("fork", source.id, "--from", "7", "--as", "ops")


def test_pause_list_and_unpause(engine):
    assert run_command("pause", "acme", "--reason", "API down", "--as", "ops").strip() == "connector acme paused"
    run = engine.run("flow", {"label": "p"})
    assert run.waiting_for == "paused acme"
    listed = run_command("pause")
    assert "connector acme  paused by ops" in listed and "1 run(s) held  API down" in listed
    with pytest.raises(CommandError, match="needs a reason"):
        call_command("pause", "flow", "--as", "ops")
    assert run_command("unpause", "acme", "--as", "ops").strip() == "connector acme unpaused"
    engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED and Pause.objects.get().active is False


def test_runs_filters_by_tag_and_error_code(engine):
    failed(engine, "t1")
    engine.run("flow", {"label": "t2"})
    out = run_command("runs", "--tag", "order=t1")
    assert "failed" in out and out.strip().endswith("1-1 of 1")
    assert run_command("runs", "--error-code", "driver_failed").strip().endswith("1-1 of 1")
    with pytest.raises(CommandError, match="key=value"):
        call_command("runs", "--tag", "order")
