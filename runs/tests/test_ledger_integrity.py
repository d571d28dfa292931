"""A ledger that cannot be quietly changed: least privilege, triggers, and a hash chain per run.

On PostgreSQL the suite runs as the runtime's role (runs/tests/db_roles_setup.py): what it may not
do to the ledger is tried here under that role; the owner's bypass is tried on an owner connection.
"""
from __future__ import annotations

import json
import threading
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, connections, transaction
from hypothesis import given, settings
from hypothesis import strategies as st

from runs import ledger, services
from runs.approvals import services as approvals
from runs.config.workflows import define_workflow
from runs.management.commands.db_roles import ledger_privileges
from runs.models import LedgerRecord, Run
from runs.testing import make_user
from runs.tests import db_roles_setup
from runs.tests.fixtures import GET, SEND

postgres_only = pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's roles and triggers")


def ledgered(ctx: Any, input: Any) -> str:
    ctx.acme.order.get({"order_id": "1"})
    ctx.acme.mail.send({"to": "a"})
    return "ok"


def two_approvals(ctx: Any, input: Any) -> dict[str, Any]:
    first = ctx.approval("First", approver="bob")
    second = ctx.approval("Second", approver="bob")
    return {"first": first.approved_by, "second": second.approved_by}


flow = define_workflow(name="ledgered", uses=[GET, SEND], run=ledgered)
twice = define_workflow(name="twice", uses=["approval"], run=two_approvals)


def chain_of(run_id: str) -> list[dict[str, Any]]:
    return [dict(r) for r in LedgerRecord.objects.filter(run_id=run_id).order_by("chain_index")
            .values("record_id", "kind", "chain_index", "prev_hash", "hash")]


def verify_output(*args: str) -> tuple[str, str, bool]:
    out, err = StringIO(), StringIO()
    try:
        call_command("ledger", "verify", *args, stdout=out, stderr=err)
    except CommandError as failed:
        return out.getvalue(), err.getvalue() + str(failed), False
    return out.getvalue(), err.getvalue(), True


# ---- the chain ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_verify_passes_on_an_untouched_ledger_with_decisions_withdrawals_and_cancels(engine_for):
    make_user("bob")
    engine = engine_for(flow, twice)
    finished = engine.run("ledgered")
    decided = engine.run("twice")  # approved once, then the second approval withdrawn
    approvals.decide(run_id=decided.id, decision="approve", by="bob", timeout=0)
    engine.drain()
    approvals.withdraw(run_id=decided.id, by="alice", reason="not needed")
    engine.drain()
    cancelled = engine.run("twice")
    services.cancel(run_id=cancelled.id, by="alice", reason="no longer needed")
    engine.drain()

    kinds = [r["kind"] for r in chain_of(decided.id)]
    assert "approval.decided" in kinds and "approval.withdrawn" in kinds
    assert chain_of(cancelled.id)[-1]["kind"] == "run.cancelled"
    for run in (finished, decided, cancelled):
        chain = chain_of(run.id)
        assert [r["chain_index"] for r in chain] == list(range(len(chain)))
        assert chain[0]["prev_hash"] == ""
        assert all(later["prev_hash"] == earlier["hash"] for earlier, later in zip(chain, chain[1:], strict=False))
        assert len({r["hash"] for r in chain}) == len(chain)
    result = ledger.verify()
    assert result.breaks == [] and result.runs == 3
    out, err, ok = verify_output()
    assert ok, err
    assert out.strip() == f"verified: 3 chains, {result.records} records"
    out, err, ok = verify_output("--run", decided.id)
    assert ok and out.strip() == f"verified: 1 chain, {len(chain_of(decided.id))} records"


@pytest.mark.django_db
def test_json_the_database_rewrites_still_verifies(engine_for):
    """jsonb prints 1e16 as 10000000000000000 and keeps 1.0 as 1.0: the canonical form agrees."""
    engine = engine_for(flow)
    run = engine.run("ledgered")
    record = ledger.build(Run.objects.get(pk=run.id), kind="op.called", seq=99, app="sanoma",
                          body={"x": 1e16, "y": 1.0, "z": 0.1, "w": [1.5e-7, -2.0, 1e300, 123456789.0],
                                "s": "é \u2028 \"q\""})
    ledger.append(record)
    assert ledger.verify(run.id).breaks == []


def test_the_hash_is_sha256_of_the_previous_hash_and_the_canonical_content():
    import hashlib

    content = {"record_id": "r:run.started:0", "run_id": "r", "seq": 0, "v": 1, "app": "a", "at": 1, "actor": "x",
               "workflow": "w", "kind": "run.started", "body": {"b": 2.0, "a": [1, "é"]}, "group": None}
    assert ledger.canonical(content) == (
        '{"actor":"x","app":"a","at":1,"body":{"a":[1,"\\u00e9"],"b":2},"group":null,"kind":"run.started",'
        '"record_id":"r:run.started:0","run_id":"r","seq":0,"v":1,"workflow":"w"}')
    digest = hashlib.sha256(ledger.canonical(content).encode()).hexdigest()
    assert ledger.content_digest(content) == digest
    assert ledger.link("ab", digest) == hashlib.sha256(("ab" + digest).encode()).hexdigest()


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_of_one_run_keep_one_chain(engine_for):
    """Steps, decisions, withdrawals and cancels of one run are written by different processes: many
    writers appending at once still make one chain, with no fork and no gap."""
    engine = engine_for(flow)
    run = engine.run("ledgered")
    row = Run.objects.get(pk=run.id)
    errors: list[BaseException] = []
    barrier = threading.Barrier(6)

    def writer(n: int) -> None:
        try:
            barrier.wait(timeout=30)
            for i in range(10):
                with transaction.atomic():
                    ledger.append(ledger.build(row, kind="op.called", seq=100 + n, key=f"w{n}-{i}",
                                               body={"writer": n, "i": i}, app="sanoma"))
        except BaseException as err:  # judged below
            errors.append(err)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    chain = chain_of(run.id)
    assert len(chain) == 4 + 60
    assert [r["chain_index"] for r in chain] == list(range(64))
    assert ledger.verify(run.id).breaks == []


# ---- an edit, by anyone, is named ---------------------------------------------------------------


def _bypass(statements: list[str]) -> None:
    """Change the ledger as its owner would, past every trigger."""
    if connection.vendor == "postgresql":
        with db_roles_setup.owner_connect() as owner, owner.transaction():
            owner.execute("ALTER TABLE runs_ledgerrecord DISABLE TRIGGER USER")
            for statement in statements:
                owner.execute(statement)
            owner.execute("ALTER TABLE runs_ledgerrecord ENABLE TRIGGER USER")
        return
    triggers = db_roles_setup.ledger_triggers
    with transaction.atomic(), connection.cursor() as cursor:
        for statement in [*triggers.SQLITE_DROP, *statements, *triggers.SQLITE_CREATE]:
            cursor.execute(statement)


@pytest.mark.django_db(transaction=True)
def test_an_owner_editing_a_record_is_named_by_verify(engine_for):
    engine = engine_for(flow)
    run = engine.run("ledgered")
    other = engine.run("ledgered")
    chain = chain_of(run.id)
    edited = chain[2]["record_id"]
    _bypass([f"UPDATE runs_ledgerrecord SET actor = 'mallory' WHERE record_id = '{edited}'"])

    out, err, ok = verify_output()
    assert not ok
    assert f"BROKEN run {run.id}: record {edited} (#2) was changed after it was written" in err
    assert "1 of 2 chains broken" in err and other.id not in err
    out, err, ok = verify_output("--run", other.id)
    assert ok

    # Recomputing the edited record's hash does not help: the next record no longer links to it.
    row = LedgerRecord.objects.get(record_id=edited)
    forged = ledger.link(row.prev_hash, ledger.content_digest(row))
    _bypass([f"UPDATE runs_ledgerrecord SET hash = '{forged}' WHERE record_id = '{edited}'"])
    result = ledger.verify(run.id)
    assert [(b.record_id, b.chain_index) for b in result.breaks] == [(chain[3]["record_id"], 3)]
    assert "does not link to the previous record" in result.breaks[0].reason


@pytest.mark.django_db(transaction=True)
def test_a_removed_record_is_named_by_verify(engine_for):
    engine = engine_for(flow)
    run = engine.run("ledgered")
    chain = chain_of(run.id)
    _bypass([f"DELETE FROM runs_ledgerrecord WHERE record_id = '{chain[1]['record_id']}'"])
    out, err, ok = verify_output("--run", run.id)
    assert not ok
    assert f"record {chain[2]['record_id']} (#2) does not follow the previous record: record #1 is missing" in err


# ---- the database refuses -------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.skipif("connection.vendor != 'sqlite'", reason="SQLite's triggers")
def test_on_sqlite_triggers_refuse_update_and_delete(engine_for):
    engine = engine_for(flow)
    run = engine.run("ledgered")
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'runs_ledgerrecord'")
        assert {name for (name,) in cursor.fetchall()} == {"runs_ledgerrecord_no_update", "runs_ledgerrecord_no_delete"}
    for sql, op in (("UPDATE runs_ledgerrecord SET actor = 'mallory' WHERE run_id = %s", "UPDATE"),
                    ("DELETE FROM runs_ledgerrecord WHERE run_id = %s", "DELETE")):
        with pytest.raises(DatabaseError, match=f"append-only: {op} of a record is refused"):
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(sql, [run.id])
    assert LedgerRecord.objects.filter(run_id=run.id).count() == 4
    assert not LedgerRecord.objects.filter(actor="mallory").exists()


@pytest.mark.django_db
@postgres_only
def test_on_postgres_the_runtime_role_can_only_read_and_append_the_ledger(engine_for):
    if not db_roles_setup.runtime_role_active():
        pytest.skip("the suite is not running as the runtime's role")
    engine = engine_for(flow)
    run = engine.run("ledgered")
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user")
        assert cursor.fetchone()[0] == db_roles_setup.RUNTIME_ROLE
    assert ledger_privileges(connection, db_roles_setup.RUNTIME_ROLE) == {
        "SELECT": True, "INSERT": True, "UPDATE": False, "DELETE": False, "TRUNCATE": False, "TRIGGER": False,
        "REFERENCES": False}
    attempts = [
        ("UPDATE runs_ledgerrecord SET actor = 'mallory' WHERE run_id = %s", [run.id], "permission denied"),
        ("DELETE FROM runs_ledgerrecord WHERE run_id = %s", [run.id], "permission denied"),
        ("TRUNCATE runs_ledgerrecord", [], "permission denied"),
        ("ALTER TABLE runs_ledgerrecord DISABLE TRIGGER runs_ledgerrecord_append_only", [], "must be owner"),
        ("ALTER TABLE runs_ledgerrecord DISABLE TRIGGER ALL", [], "must be owner"),
        ("SET session_replication_role = replica", [], "permission denied"),
        ("DROP TRIGGER runs_ledgerrecord_chain ON runs_ledgerrecord", [], "must be owner"),
    ]
    for sql, params, says in attempts:
        with pytest.raises(DatabaseError, match=says):
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(sql, params)
    assert LedgerRecord.objects.filter(run_id=run.id).count() == 4
    assert ledger.verify(run.id).breaks == []


@pytest.mark.django_db(transaction=True)
@postgres_only
def test_on_postgres_the_owner_is_refused_truncate_update_and_delete_by_triggers(engine_for):
    engine = engine_for(flow)
    run = engine.run("ledgered")
    import psycopg

    for sql in ("TRUNCATE runs_ledgerrecord", f"UPDATE runs_ledgerrecord SET actor = 'x' WHERE run_id = '{run.id}'",
                f"DELETE FROM runs_ledgerrecord WHERE run_id = '{run.id}'"):
        with db_roles_setup.owner_connect() as owner:
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
                owner.execute(sql)
    assert LedgerRecord.objects.filter(run_id=run.id).count() == 4


@pytest.mark.django_db
@postgres_only
def test_db_roles_is_idempotent_and_prints_its_sql():
    out = StringIO()
    call_command("db_roles", "--sql", "--runtime", "sanoma_runtime_x", stdout=out)
    sql = out.getvalue()
    assert "GRANT SELECT, INSERT ON \"public\".runs_ledgerrecord TO \"sanoma_runtime_x\";" in sql
    assert "REVOKE ALL ON \"public\".runs_ledgerrecord FROM \"sanoma_runtime_x\";" in sql


# ---- the admin ------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_admin_shows_a_runs_chain_as_verified_or_names_the_break(engine_for):
    from django.test import Client

    engine = engine_for(flow)
    run = engine.run("ledgered")
    admin = make_user("root", superuser=True)
    client = Client()
    client.force_login(admin)
    url = f"/admin/runs/run/{run.id}/change/"
    page = client.get(url).content.decode()
    assert "Hash chain" in page and "verified: 4 records, each linked" in page
    edited = chain_of(run.id)[1]["record_id"]
    _bypass([f"UPDATE runs_ledgerrecord SET body = '{{}}' WHERE record_id = '{edited}'"])
    page = client.get(url).content.decode()
    assert f"BROKEN: run {run.id}: record {edited} (#1) was changed after it was written" in page


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=400, deadline=None)
@given(body=st.dictionaries(st.text(max_size=8), _JSON, max_size=5), actor=st.text(max_size=10),
       app=st.text(max_size=6), group=st.none() | st.dictionaries(st.text(max_size=4), _JSON, max_size=2),
       seq=st.integers(min_value=0, max_value=2**31), at=st.integers(min_value=0, max_value=2**62))
def test_the_checkpoint_s_digest_made_with_its_body_s_text_is_the_canonical_one(body, actor, app, group, seq, at):
    """The engine's checkpoint encodes a record's body once, for its digest and for the insert: the
    digest is the canonical form's, and the text it sends is the body as it is."""
    record = ledger_chain_record(body=body, actor=actor, app=app, group=group, seq=seq, at=at)
    digest, body_text = ledger.digest_and_body(record)
    assert digest == ledger.content_digest(record)
    if body_text is not None:
        assert json.loads(body_text) == body
        assert body_text == json.dumps(body, sort_keys=True, separators=(",", ":"))


def ledger_chain_record(**fields: Any) -> LedgerRecord:
    return LedgerRecord(record_id="r:op.called:1", run_id='r"un\\1', v=1, workflow="w", kind="op.called", **fields)


def test_a_record_written_without_the_chain_is_named_as_such():
    """A record with no hash (written with the chain off, as `bench/engine.py`'s (h) writes its
    comparison runs) is named for what it is, not as a record missing before it."""
    record = ledger_chain_record(body={"x": 1}, actor="a", app="a", group=None, seq=1, at=1)
    first = {**ledger.content_of(record), "chain_index": 0, "prev_hash": ""}
    first["hash"] = ledger.link("", ledger.content_digest(first))
    unlinked = {**first, "record_id": "r:op.called:2", "chain_index": 1000600, "prev_hash": "", "hash": ""}
    broken = ledger.check_chain([first, unlinked])
    assert broken is not None and broken.chain_index == 1000600
    assert broken.reason == "has no hash: it was written without the chain, or its hash was removed"
    assert ledger.check_chain([first]) is None


@pytest.mark.django_db(transaction=True)
def test_verify_heads_prints_each_chain_s_last_record_to_keep_elsewhere(engine_for):
    engine = engine_for(flow)
    runs = sorted([engine.run("ledgered").id, engine.run("ledgered").id])
    out, _, ok = verify_output("--heads")
    lines = out.strip().splitlines()
    assert ok and lines[-1] == f"verified: 2 chains, {sum(len(chain_of(r)) for r in runs)} records"
    assert lines[:-1] == [f"{r} {chain_of(r)[-1]['chain_index']} {chain_of(r)[-1]['hash']}" for r in runs]
