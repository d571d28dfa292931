"""The deploy: every parked run of another version is proven on the new code, then migrated (in
one transaction with its `run.migrated` record) or pinned (`run.pinned`, once per deploy), never
moved twice. Runs park on one config (the old code) through the real engine; the deploy runs on
another (the new code).
"""
from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.core.management.base import CommandError
from django.db import DatabaseError, connection
from django.test import override_settings
from django_q.models import OrmQ

from runs.authoring import define_workflow
from runs.deploys import DEPLOY_ACTOR, deploy
from runs.models import AppVersion, LedgerKind, LedgerRecord, Run, RunStatus
from runs.policies import allow, approve, define_policy
from runs.services import send_message
from runs.tests import db_roles_setup
from runs.tests.fixtures import GET, REFUND, SEND, acme
from runs.versions import UNCOMMITTED

USES: list[Any] = [GET, SEND, REFUND, "wait_message", "sleep"]


def waits(ctx, input):
    ctx.acme.order.get({"order_id": "1"})
    ctx.wait_message("shipped")
    return "done"


def appended(ctx, input):
    ctx.acme.order.get({"order_id": "1"})
    ctx.wait_message("shipped")
    ctx.acme.mail.send({"to": "a", "text": "shipped"})
    return "done, told"


def inserted(ctx, input):
    ctx.acme.order.get({"order_id": "1"})
    ctx.acme.mail.send({"to": "a", "text": "inserted"})
    ctx.wait_message("shipped")
    return "done"


def queued_first(ctx, input):
    ctx.acme.order.get({"order_id": "2"})
    return "ran"


def other_body(ctx, input):
    ctx.sleep(hours=1)


def hold_refunds(call):
    return approve("bob") if call.op["id"] == REFUND.id else allow()


def refunds_open(call):
    return allow()


def flow(body):
    return define_workflow(name="parks", uses=USES, run=body)


OTHER = define_workflow(name="other", uses=["sleep"], run=other_body)


@pytest.fixture
def code(engine_for):
    def build(body, *extra, policy=None, other=OTHER):
        return engine_for(flow(body), other, *extra, policy=policy, connectors=[acme])
    return build


def parked(engine) -> Run:
    run = engine.start("parks")
    engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING and run.waiting_for == "message", (run.status, run.error)
    return run


def records(run: Run, kind: str) -> list[LedgerRecord]:
    return list(LedgerRecord.objects.filter(run_id=run.id, kind=kind).order_by("id"))


def test_a_proven_run_is_migrated_with_its_record_and_finishes_on_the_new_code(code):
    old = code(waits)
    run = parked(old)
    deploy(config=old.config)
    new = code(appended)
    report = deploy(config=new.config)
    assert [p.run_id for p in report.migrated] == [run.id] and report.pinned == []
    run.refresh_from_db()
    assert run.app_version == new.config.workflow_versions["parks"] != old.config.workflow_versions["parks"]
    [moved] = records(run, LedgerKind.RUN_MIGRATED)
    assert moved.actor == DEPLOY_ACTOR
    assert moved.body == {"from": old.config.workflow_versions["parks"], "to": run.app_version, "steps": 2,
                          "deploy": new.config.version}
    row = AppVersion.objects.get(version=new.config.version)
    assert row.workflows == new.config.workflow_versions
    send_message(run_id=run.id, topic="shipped", payload={}, by="alice")
    new.drain()
    run.refresh_from_db()
    assert (run.status, run.result) == (RunStatus.FINISHED, "done, told")
    assert [c["op"] for c in new.fake.calls] == ["acme.mail.send"]  # the recorded call was not made again


def test_an_unprovable_run_is_pinned_once_and_never_moved(code):
    old = code(waits)
    run = parked(old)
    deploy(config=old.config)
    new = code(inserted)
    for _ in range(2):  # the deploy run again (a second worker of the same code starting) adds nothing
        report = deploy(config=new.config)
        assert [(p.run_id, p.step) for p in report.pinned] == [(run.id, 2)] and report.migrated == []
    run.refresh_from_db()
    assert run.app_version == old.config.workflow_versions["parks"]
    [pin] = records(run, LedgerKind.RUN_PINNED)
    assert pin.body == {"version": run.app_version, "deploy": new.config.version, "step": 2,
                        "reason": "step 2 was wait shipped, now call acme.mail.send"}
    assert records(run, LedgerKind.RUN_MIGRATED) == []


def test_a_run_is_never_moved_twice_and_an_older_version_deploys_nothing(code):
    old = code(waits)
    run = parked(old)
    deploy(config=old.config)
    new = code(appended)
    deploy(config=new.config)
    again = deploy(config=new.config)
    assert again.migrated == [] and again.pinned == []
    assert len(records(run, LedgerKind.RUN_MIGRATED)) == 1
    # A worker of the old code starting again (for its pinned runs) is not the latest: it moves nothing back.
    back = deploy(config=old.config)
    assert back.note.startswith("not the latest version") and "--promote" in back.note and back.migrated == []
    run.refresh_from_db()
    assert run.app_version == new.config.workflow_versions["parks"]


def test_an_edit_of_another_workflow_leaves_the_run_where_it_is(code):
    old = code(waits)
    run = parked(old)
    deploy(config=old.config)

    def other_edited(ctx, input):
        ctx.sleep(hours=2)

    new = code(waits, other=define_workflow(name="other", uses=["sleep"], run=other_edited))
    assert new.config.workflow_versions["other"] != old.config.workflow_versions["other"]
    report = deploy(config=new.config)
    assert report.migrated == [] and report.pinned == []  # the same workflow version: nothing to prove
    run.refresh_from_db()
    assert run.app_version == old.config.workflow_versions["parks"] == new.config.workflow_versions["parks"]


def test_a_queued_run_migrated_is_handed_to_the_workers_again(code):
    old = code(queued_first)
    run = old.start("parks")  # queued, not advanced: its task went to a worker that left it alone
    deploy(config=old.config)
    OrmQ.objects.all().delete()
    new = code(queued_first, policy=define_policy(refunds_open, version="v2"))
    report = deploy(config=new.config)
    assert [p.run_id for p in report.migrated] == [run.id]
    assert OrmQ.objects.count() == 1  # enqueued in the migration's transaction
    new.drain()
    run.refresh_from_db()
    assert (run.status, run.result) == (RunStatus.FINISHED, "ran")


def test_a_policy_change_judges_held_calls_again(code):
    def holds(ctx, input):
        ctx.acme.order.refund({"order_id": "1", "amount": 10})
        return "refunded"

    old = code(holds, policy=define_policy(hold_refunds, version="v1"))
    run = old.start("parks")
    old.drain()
    run.refresh_from_db()
    assert run.waiting_for == "approval"
    assert deploy(config=old.config).rejudged is None  # the first deploy: no policy before it
    assert deploy(config=old.config).rejudged is None  # the same policy: nothing judged again
    new = code(holds, policy=define_policy(refunds_open, version="v2"))
    report = deploy(config=new.config)
    assert report.rejudged is not None and [r["run"] for r in report.rejudged.released] == [run.id]
    assert [p.run_id for p in report.migrated] == [run.id]  # a held call replays to the same hold
    new.drain()
    run.refresh_from_db()
    assert (run.status, run.result) == (RunStatus.FINISHED, "refunded")


def test_the_deploy_says_the_policy_changed_only_when_it_did(code, capsys):
    """As a user does it: `manage.py deploy` twice on the latest code says nothing of the policy
    (the second compares with the first, not with the version before it); an edit of the policy
    is said once, and deploying it again says nothing more."""
    from django.core.management import call_command

    from runs.config.registry import set_config

    def deployed(engine, *args: str) -> str:
        set_config(engine.config)
        call_command("deploy", *args)
        return capsys.readouterr().out

    first = code(waits, policy=define_policy(hold_refunds, version="v1"))
    parked(first)
    assert "policy" not in deployed(first)  # the first deploy: no policy before it
    assert "policy" not in deployed(first)
    edited = code(waits, policy=define_policy(refunds_open, version="v2"))
    said = deployed(edited)
    assert said.count("the policy changed") == 1, said
    assert f"deploy {edited.config.version}: the policy changed: released 0 held call(s)" in said
    again = deployed(edited)
    assert "policy" not in again, again  # the same policy as the deploy before it
    assert "policy" not in deployed(edited)
    assert "the policy changed" in deployed(first, "--promote")  # the older version back: its policy differs
    assert "policy" not in deployed(first)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="a trigger that fails the record's insert: PostgreSQL")
@pytest.mark.django_db(transaction=True)
def test_the_move_and_its_record_are_one_transaction(code):
    old = code(waits)
    run = parked(old)
    deploy(config=old.config)
    new = code(appended)
    # The tables' owner adds a trigger that refuses the record (the runtime's role may not).
    with db_roles_setup.owner_connect() as owner, owner.transaction():
        owner.execute("""
            CREATE FUNCTION refuse_migrated() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN IF NEW.kind = 'run.migrated' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$""")
        owner.execute("""CREATE TRIGGER refuse_migrated BEFORE INSERT ON runs_ledgerrecord
                         FOR EACH ROW EXECUTE FUNCTION refuse_migrated()""")
    try:
        with pytest.raises(DatabaseError):
            deploy(config=new.config)
    finally:
        with db_roles_setup.owner_connect() as owner, owner.transaction():
            owner.execute("DROP TRIGGER refuse_migrated ON runs_ledgerrecord")
            owner.execute("DROP FUNCTION refuse_migrated()")
    run.refresh_from_db()
    assert run.app_version == old.config.workflow_versions["parks"]  # the record failed: the run did not move
    assert deploy(config=new.config).migrated[0].run_id == run.id


def test_deploy_json_says_what_it_did(code, capsys):
    from django.core.management import call_command

    from runs.config.registry import set_config
    old = code(waits)
    run = parked(old)
    deploy(config=old.config)
    new = code(inserted)
    set_config(new.config)
    call_command("deploy", "--json")
    said = json.loads(capsys.readouterr().out)
    assert said["version"] == new.config.version and said["migrated"] == []
    assert [(p["run"], p["outcome"], p["step"]) for p in said["pinned"]] == [(run.id, "pinned", 2)]
    assert (said["released"], said["reassigned"], said["refused"]) == (0, 0, 0)
    assert Counter(r.kind for r in LedgerRecord.objects.filter(run_id=run.id))[LedgerKind.RUN_PINNED] == 1



# ---- what the row records of the code: a commit only when it holds the code -------------------------

GIT = ["git", "-c", "user.name=sanoma tests", "-c", "user.email=tests@example.com", "-c", "init.defaultBranch=main"]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run([*GIT, "-C", str(cwd), *args], capture_output=True, text=True, check=True).stdout.strip()


def committed_root(tmp_path: Path) -> Path:
    """A config root at `company/` of a git repository, committed, with a var dir under it (untracked)."""
    root = tmp_path / "repo" / "company"
    (root / "workflows").mkdir(parents=True)
    (root / "workflows" / "parks.py").write_text("# the workflow\n")
    git(tmp_path, "init", "-q", str(tmp_path / "repo"))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the company")
    (root / "var").mkdir()
    (root / "var" / "sanoma.log").write_text("a log\n")
    (root / "workflows" / "__pycache__").mkdir()
    (root / "workflows" / "__pycache__" / "parks.cpython-311.pyc").write_bytes(b"")
    return root


def test_a_deploy_from_uncommitted_changes_records_no_commit_and_says_why(code, tmp_path):
    root = committed_root(tmp_path)
    old = code(waits)
    old.config.root = root
    with override_settings(VAR_DIR=root / "var"):
        deploy(config=old.config)
        row = AppVersion.objects.get(version=old.config.version)
        # The var dir and byte-code caches under the root are not code: HEAD holds this code.
        assert (row.commit, row.root, row.worker_error) == (git(root, "rev-parse", "HEAD"), str(root.resolve()), "")
        (root / "workflows" / "parks.py").write_text("# edited, not committed\n")
        new = code(inserted)
        new.config.root = root
        report = deploy(config=new.config)
        assert report.note == ""
        row = AppVersion.objects.get(version=new.config.version)
        assert row.commit == "" and row.root == str(root.resolve())
        assert row.worker_error == UNCOMMITTED and row.worker_error.startswith("deployed from uncommitted changes")
        git(root, "commit", "-qam", "the edit")  # committed, deployed again: the row now names the commit
        (root / "workflows" / "new.py").write_text("# untracked: read by the config\n")
        deploy(config=new.config)
        assert AppVersion.objects.get(version=new.config.version).commit == ""
        (root / "workflows" / "new.py").unlink()
        deploy(config=new.config)
        row = AppVersion.objects.get(version=new.config.version)
        assert (row.commit, row.worker_error) == (git(root, "rev-parse", "HEAD"), "")


def test_a_refused_deploy_names_promote_and_leaves_the_row_as_it_was(code, tmp_path):
    from django.core.management import call_command

    from runs.config.registry import set_config
    old = code(waits)
    deploy(config=old.config)
    new = code(appended)
    deploy(config=new.config)
    before = AppVersion.objects.get(version=old.config.version)
    old.config.root = committed_root(tmp_path)  # the older version's code, from a worktree elsewhere
    report = deploy(config=old.config)
    assert report.lines() == [f"deploy {old.config.version}: not the latest version ({new.config.version} is): "
                              "nothing deployed, no run moved, the version's row left as it was; run with "
                              "--promote to make it the latest"]
    after = AppVersion.objects.get(version=old.config.version)
    assert (after.root, after.commit, after.promoted_at) == (before.root, before.commit, before.promoted_at)
    set_config(old.config)
    with pytest.raises(CommandError, match="run with --promote to make it the latest"):
        call_command("deploy")
    assert AppVersion.objects.get(version=old.config.version).root == before.root
    with override_settings(VAR_DIR=old.config.root / "var"):  # promoted: the latest again, and the row says
        call_command("deploy", "--promote")                    # where its code is now
    after = AppVersion.objects.get(version=old.config.version)
    assert after.root == str(old.config.root.resolve()) and after.commit == git(old.config.root, "rev-parse", "HEAD")
    assert AppVersion.objects.order_by("-promoted_at").first() == after
