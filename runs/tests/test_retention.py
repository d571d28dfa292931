"""Retention: ended runs past their keep are exported (JSON Lines, one file a day, verifiable offline)
and removed in batches; the ledger lets their records go only once the export is recorded.

On PostgreSQL the suite runs as the runtime's role, which may not delete ledger records: retention
runs as the tables' owner there (`as_owner`), as the docs say to run it.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, transaction
from django.test import override_settings
from guardian.shortcuts import assign_perm

from runs import ledger
from runs.approvals import services as approvals
from runs.config.workflows import define_workflow
from runs.engine import clock
from runs.models import Approval, DecisionMessage, LedgerRecord, PrunedRun, Run, RunTag, RunUserObjectPermission, Step
from runs.retention import services
from runs.retention.export import verify_paths
from runs.retention.services import RetentionError, Rules
from runs.testing import make_user
from runs.tests import db_roles_setup
from runs.tests.fixtures import GET, SEND


def two_calls(ctx: Any, input: Any) -> str:
    ctx.acme.order.get({"order_id": "1"})
    ctx.acme.mail.send({"to": "a"})
    return "ok"


def tagged_and_approved(ctx: Any, input: Any) -> str:
    ctx.tag(order="1001")
    ctx.approval("Go ahead", approver="bob")
    ctx.acme.order.get({"order_id": "1"})
    return "ok"


brief = define_workflow(name="brief", uses=[GET, SEND], run=two_calls, keep=timedelta(days=30))
lasting = define_workflow(name="lasting", uses=[GET, SEND], run=two_calls)
approved = define_workflow(name="approved", uses=[GET, "approval"], run=tagged_and_approved, keep=timedelta(days=1))


@contextmanager
def as_owner() -> Iterator[None]:
    """PostgreSQL: the test database's owner on the default connection for the block."""
    if connection.vendor != "postgresql" or not db_roles_setup.runtime_role_active():
        yield
        return
    settings_dict = connection.settings_dict
    saved = settings_dict["USER"], settings_dict["PASSWORD"]
    connection.close()
    settings_dict["USER"], settings_dict["PASSWORD"] = db_roles_setup._owner["USER"], db_roles_setup._owner["PASSWORD"]
    try:
        yield
    finally:
        connection.close()
        settings_dict["USER"], settings_dict["PASSWORD"] = saved


def ended_days_ago(run: Run, days: float) -> None:
    Run.objects.filter(pk=run.pk).update(ended_at=clock.now() - timedelta(days=days))


def retention(*args: str) -> tuple[str, bool]:
    out = StringIO()
    try:
        with as_owner():
            call_command("retention", *args, stdout=out)
    except CommandError as failed:
        return out.getvalue() + str(failed), False
    return out.getvalue(), True


def verify(*args: str) -> tuple[str, bool]:
    out, err = StringIO(), StringIO()
    try:
        call_command("ledger", "verify", *args, stdout=out, stderr=err)
    except CommandError as failed:
        return out.getvalue() + err.getvalue() + str(failed), False
    return out.getvalue() + err.getvalue(), True


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    with override_settings(SANOMA_RETENTION_DIR=tmp_path / "exports"):
        yield tmp_path / "exports"


@pytest.fixture
def four_runs(engine_for: Any) -> dict[str, Run]:
    """Two `brief` runs past its 30 days, one within them, one `lasting` run long ended."""
    engine = engine_for(brief, lasting)
    runs = {name: engine.run(workflow) for name, workflow in
            (("old", "brief"), ("older", "brief"), ("recent", "brief"), ("lasting", "lasting"))}
    for name, days in (("old", 31), ("older", 40), ("recent", 29), ("lasting", 400)):
        ended_days_ago(runs[name], days)
    return runs


# ---- declaring a keep --------------------------------------------------------------------------


@pytest.mark.parametrize("keep", [timedelta(0), timedelta(days=-1), 30, "30d"])
def test_a_keep_that_is_not_a_positive_timedelta_is_refused_naming_keep(keep: Any) -> None:
    with pytest.raises(ValueError, match=r'Workflow "w": keep is how long its ended runs are kept, a timedelta'):
        define_workflow(name="w", run=two_calls, keep=keep)


def test_rules_take_each_workflows_keep_and_the_sites_default() -> None:
    assert brief.keep == timedelta(days=30) and lasting.keep is None
    with override_settings(SANOMA_KEEP_ENDED_RUNS_DAYS=None):
        assert Rules.of(None).keeps_everything
    with override_settings(SANOMA_KEEP_ENDED_RUNS_DAYS=365.0):
        assert Rules.of(None).default == timedelta(days=365)


# ---- the dry run -------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_dry_run_says_what_it_would_remove_and_changes_nothing(four_runs: dict[str, Run], folder: Path) -> None:
    out, ok = retention("--dry-run")
    assert ok, out
    assert "brief: kept 30 days" in out
    assert "every other workflow: kept forever (SANOMA_KEEP_ENDED_RUNS_DAYS is unset)" in out
    assert "dry run: would export 2 runs to" in out
    assert "  brief: 2 runs, ended" in out
    assert "into 2 files: runs-" in out and "(a run goes after its child runs; nothing was changed)" in out
    assert Run.objects.count() == 4 and not PrunedRun.objects.exists()
    assert not folder.exists() or not any(folder.iterdir())


@pytest.mark.django_db(transaction=True)
def test_nothing_is_due_when_every_run_is_kept_forever(engine_for: Any, folder: Path) -> None:
    engine = engine_for(lasting)
    ended_days_ago(engine.run("lasting"), 4000)
    out, ok = retention()
    assert ok and "nothing to do: every run is kept forever" in out
    assert Run.objects.count() == 1


# ---- exporting and removing --------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_due_runs_are_exported_verified_and_removed_and_the_rest_still_verify(
        four_runs: dict[str, Run], folder: Path) -> None:
    gone = [four_runs["older"].id, four_runs["old"].id]
    heads = {run_id: list(LedgerRecord.objects.filter(run_id=run_id).order_by("chain_index")
                          .values_list("hash", flat=True)) for run_id in gone}
    steps = Step.objects.filter(run_id__in=gone).count()
    assert steps > 0

    out, ok = retention("--batch-size", "1")
    assert ok, out
    assert "batch 1: 1 run (" in out and "batch 2: 1 run (" in out
    assert "done: 2 runs" in out and "in 2 batches" in out

    assert set(Run.objects.values_list("id", flat=True)) == {four_runs["recent"].id, four_runs["lasting"].id}
    assert not LedgerRecord.objects.filter(run_id__in=gone).exists()
    assert not Step.objects.filter(run_id__in=gone).exists()
    pruned = {p.run_id: p for p in PrunedRun.objects.all()}
    assert set(pruned) == set(gone)
    for run_id in gone:
        assert pruned[run_id].records == len(heads[run_id]) and pruned[run_id].head == heads[run_id][-1]
        assert (folder / pruned[run_id].export_file).is_file()

    # The live ledger still verifies; the export verifies offline and names the same heads.
    out, ok = verify()
    assert ok and out.startswith("verified: 2 chains"), out
    out, ok = verify("--export", str(folder))
    assert ok and f"verified export: 2 runs, {sum(map(len, heads.values()))} records, 2 chain heads" in out, out
    checked = verify_paths([folder])
    assert {r: h.hash for r, h in checked.heads.items()} == {r: h[-1] for r, h in heads.items()}

    lines = [json.loads(raw) for path in sorted(folder.iterdir()) for raw in path.read_text().splitlines()]
    older = [item for item in lines if item["run_id"] == four_runs["older"].id]
    assert [item["type"] for item in older][0] == "run" and older[-1]["type"] == "head"
    assert sum(item["type"] == "step" for item in lines) == steps
    assert older[0]["run"]["status"] == "finished" and older[0]["run"]["result"] == "ok"

    # A removed run's chain is named with its export.
    out, ok = verify("--run", four_runs["old"].id)
    assert not ok and f"its {len(heads[four_runs['old'].id])} records" in out and pruned[gone[1]].export_file in out

    # Again: nothing more is due.
    out, ok = retention()
    assert ok and "done: 0 runs" in out


@pytest.mark.django_db(transaction=True)
def test_the_sites_default_keep_applies_to_workflows_without_their_own(four_runs: dict[str, Run],
                                                                     folder: Path) -> None:
    with override_settings(SANOMA_KEEP_ENDED_RUNS_DAYS=365.0):
        out, ok = retention()
    assert ok, out
    assert "every other workflow: kept 365 days" in out
    assert set(Run.objects.values_list("id", flat=True)) == {four_runs["recent"].id}


@pytest.mark.django_db(transaction=True)
def test_a_run_still_running_is_never_removed(engine_for: Any, folder: Path) -> None:
    engine = engine_for(brief)
    started = engine.start("brief")
    Run.objects.filter(pk=started.pk).update(ended_at=clock.now() - timedelta(days=99))  # not ended: queued
    out, ok = retention("--dry-run")
    assert ok and "nothing would be removed" in out
    out, ok = retention()
    assert ok and "done: 0 runs" in out and Run.objects.filter(pk=started.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_a_runs_approvals_decisions_tags_and_permissions_go_with_it_and_are_in_the_export(
        engine_for: Any, folder: Path) -> None:
    bob = make_user("bob")
    engine = engine_for(approved)
    run = engine.start("approved")
    engine.drain()
    approvals.decide(run_id=run.id, decision="approve", by="bob", timeout=0)
    engine.drain()
    run.refresh_from_db()
    assert run.status == "finished", run.error
    assert Approval.objects.filter(run=run).exists() and RunTag.objects.filter(run=run).exists()
    assert DecisionMessage.objects.filter(approval__run=run).exists()
    assign_perm("runs.view_run", bob, run)  # a permission row on the run (an approver needs none)
    assert RunUserObjectPermission.objects.filter(content_object=run).exists()
    ended_days_ago(run, 2)

    out, ok = retention()
    assert ok and "done: 1 run" in out, out
    assert not Run.objects.exists() and not Approval.objects.exists() and not RunTag.objects.exists()
    assert not DecisionMessage.objects.exists() and not RunUserObjectPermission.objects.exists()
    kinds = [json.loads(raw)["type"] for path in folder.iterdir() for raw in path.read_text().splitlines()]
    assert {"run", "step", "approval", "decision_message", "tag", "ledger", "head"} <= set(kinds)
    out, ok = verify("--export", str(folder))
    assert ok, out


# ---- what the database refuses -----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_ledger_still_refuses_deleting_records_of_a_run_not_exported(four_runs: dict[str, Run]) -> None:
    run_id = four_runs["old"].id
    with as_owner():
        with pytest.raises(DatabaseError, match="append-only"):
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("DELETE FROM runs_ledgerrecord WHERE run_id = %s", [run_id])
        # A recorded export covers the records it names, no more.
        PrunedRun.objects.create(run_id=run_id, workflow="brief", status="finished", ended_at=clock.now(),
                                 records=1, head="", export_file="x", pruned_at=clock.now())
        with pytest.raises(DatabaseError, match="append-only"):
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("DELETE FROM runs_ledgerrecord WHERE run_id = %s", [run_id])
        with pytest.raises(DatabaseError, match="append-only"):
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("UPDATE runs_ledgerrecord SET actor = 'x' WHERE run_id = %s AND chain_index = 0",
                               [run_id])
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("DELETE FROM runs_ledgerrecord WHERE run_id = %s AND chain_index = 0", [run_id])
    assert LedgerRecord.objects.filter(run_id=run_id).count() == 3
    assert LedgerRecord.objects.filter(actor="x").count() == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's roles")
def test_the_runtime_role_is_told_to_run_retention_as_the_owner(four_runs: dict[str, Run], folder: Path) -> None:
    if not db_roles_setup.runtime_role_active():
        pytest.skip("the suite is not running as the runtime's role")
    with pytest.raises(RetentionError, match="may not remove ledger records: run retention as the tables' owner"):
        services.run_retention(rules=Rules.of(None, default=timedelta(days=1)), folder=folder)
    assert Run.objects.count() == 4 and not folder.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's advisory lock")
def test_a_second_retention_at_the_same_time_stops_at_once(four_runs: dict[str, Run], folder: Path) -> None:
    with db_roles_setup.owner_connect() as other:
        other.execute("SELECT pg_advisory_lock(%s)", [services.LOCK_KEY])
        out, ok = retention()
        assert not ok and "another retention is running on this database; nothing was done" in out
        assert Run.objects.count() == 4 and not PrunedRun.objects.exists()
    out, ok = retention()
    assert ok and "done: 2 runs" in out, out


def test_bad_options_are_named() -> None:
    for args, says in ((["--batch-size", "0"], "--batch-size must be at least 1"),
                       (["--database", "nope"], "--database nope: no such connection")):
        with pytest.raises(CommandError, match=says):
            call_command("retention", *args, stdout=StringIO())


# ---- checking an export ------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_verify_export_names_a_changed_record_a_cut_file_and_a_bad_line(four_runs: dict[str, Run],
                                                                          folder: Path) -> None:
    out, ok = retention()
    assert ok, out
    path = folder / PrunedRun.objects.get(run_id=four_runs["old"].id).export_file
    original = path.read_text()

    changed = original.replace('"actor":"alice"', '"actor":"mallory"', 1)
    assert changed != original
    path.write_text(changed)
    out, ok = verify("--export", str(path))
    assert not ok and "was changed after it was written" in out, out

    lines = original.splitlines(keepends=True)
    path.write_text("".join(lines[:-1]))  # the head line cut off
    out, ok = verify("--export", str(path))
    assert not ok and f"run {four_runs['old'].id} has no head line (the export was cut short)" in out, out

    ledger_line = next(i for i, text in enumerate(lines) if '"type":"ledger"' in text)
    path.write_text("".join(lines[:ledger_line] + lines[ledger_line + 1:]))  # the first record removed
    out, ok = verify("--export", str(path))
    assert not ok and "record #0 is missing" in out, out

    path.write_text(original + "{not json\n")
    out, ok = verify("--export", str(path))
    assert not ok and f"{path.name}, line {len(lines) + 1}: not JSON" in out, out

    out, ok = verify("--export", str(folder / "runs-1999-01-01.jsonl"))
    assert not ok and "no such file" in out

    path.write_text(original + original)  # written twice (a batch retried): still one chain
    out, ok = verify("--export", str(path))
    assert ok, out
    assert ledger.verify().breaks == []
