"""The ledger: append-only, deterministic ids, first write wins, errors as recorded."""
from __future__ import annotations

import logging
from typing import Any

import pytest
from django.db import DatabaseError, connection, transaction

from connectors import DriverError
from runs import ledger
from runs.config.workflows import define_workflow
from runs.models import LedgerRecord
from runs.tests.fixtures import GET, PUBLISH, SEND


def body(ctx, input):
    ctx.acme.order.get({"order_id": "1"})
    ctx.all([lambda: ctx.acme.mail.send({"to": "a"}), lambda: ctx.acme.mail.send({"to": "b"})])
    return "ok"


flow = define_workflow(name="ledgered", uses=[GET, SEND, "all"], run=body)


def test_every_record_carries_the_common_fields_and_a_deterministic_id(engine_for):
    engine = engine_for(flow)
    run = engine.run("ledgered")
    records = engine.records(run)
    assert [r["type"] for r in records] == ["run.started", "op.called", "op.called", "op.called", "run.finished"]
    assert [r["id"] for r in records] == [f"{run.id}:run.started:0", f"{run.id}:op.called:1",
                                          f"{run.id}:op.called:2", f"{run.id}:op.called:3", f"{run.id}:run.finished:4"]
    for record in records:
        assert record["v"] == 1 and record["app"] == "sanoma" and record["actor"] == "alice"
        assert record["workflow"] == "ledgered" and record["run_id"] == run.id and isinstance(record["at"], int)
    called = records[1]
    assert called["op"] == "acme.order.get" and called["effect"] == "read"
    assert called["decision"]["kind"] == "allow" and called["decision"]["policy_version"]
    assert called["output"]["order_id"] == "1" and called["attempt"] == 1 and "duration_ms" in called


def test_the_ledger_refuses_updates_and_deletes_in_code(engine_for):
    engine = engine_for(flow)
    run = engine.run("ledgered")
    record = LedgerRecord.objects.filter(run_id=run.id).first()
    assert record is not None
    record.kind = "forged"
    with pytest.raises(PermissionError, match="append-only"):
        record.save()
    with pytest.raises(PermissionError, match="append-only"):
        record.delete()
    with pytest.raises(PermissionError, match="append-only"):
        LedgerRecord.objects.filter(run_id=run.id).update(kind="forged")
    with pytest.raises(PermissionError, match="append-only"):
        LedgerRecord.objects.filter(run_id=run.id).delete()


def test_on_postgres_the_database_itself_refuses_updates_and_deletes(engine_for):
    if connection.vendor != "postgresql":
        pytest.skip("the trigger exists on PostgreSQL only; SQLite relies on the model's refusals")
    engine = engine_for(flow)
    run = engine.run("ledgered")
    for sql in ("UPDATE runs_ledgerrecord SET kind = 'forged' WHERE run_id = %s",
                "DELETE FROM runs_ledgerrecord WHERE run_id = %s"):
        # The runtime's role is refused by its grants first; the owner by the trigger.
        with pytest.raises(DatabaseError, match="append-only|permission denied"):
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(sql, [run.id])
    assert LedgerRecord.objects.filter(run_id=run.id, kind="forged").count() == 0


def test_a_record_written_again_with_other_content_keeps_the_first_and_warns(engine_for, caplog):
    engine = engine_for(flow)
    run = engine.run("ledgered")
    first = LedgerRecord.objects.get(record_id=f"{run.id}:run.finished:4")
    again = ledger.build(run, kind="run.finished", seq=4, body={"output": "something else"}, app="sanoma")
    with caplog.at_level(logging.WARNING, logger="sanoma.ledger"):
        kept = ledger.append(again)
    assert kept.pk == first.pk and kept.body == {"output": "ok"}
    assert "written again with other content; the first is kept" in caplog.text
    assert "something else" in caplog.text


def test_replaying_after_a_restart_duplicates_no_record(engine_for):
    def run(ctx, input):
        ctx.acme.mail.send({"to": "a"})
        ctx.sleep(seconds=1)
        ctx.acme.mail.send({"to": "b"})
        return "ok"

    from datetime import timedelta

    from runs.engine import clock
    engine = engine_for(define_workflow(name="restartable", uses=[SEND, "sleep"], run=run))
    started = engine.run("restartable")
    clock.advance(timedelta(seconds=2))
    engine.drain()
    ids = [r["id"] for r in engine.records(started)]
    assert len(ids) == len(set(ids)) == 5
    assert len(engine.fake.calls) == 2


def test_a_driver_error_is_recorded_with_its_vendor_details_and_a_plain_one_without(engine_for):
    engine = engine_for(
        define_workflow(name="errors", uses=[PUBLISH, SEND], run=lambda ctx, i: ctx.acme.post.publish({"text": "x"})),
        define_workflow(name="plain-error", uses=[SEND], run=lambda ctx, i: ctx.acme.mail.send({"to": "x"})),
    )
    engine.fake.fail_next(
        "acme.post.publish", DriverError("quota", retryable=False, status=402, vendor_code="over_quota")
    )
    run = engine.run("errors")
    assert engine.records(run, "op.called")[0]["error"] == {
        "code": "driver_failed", "name": "DriverError", "message": "quota", "retryable": False, "status": 402,
        "vendor_code": "over_quota",
    }
    err: Any = ValueError("reply was not JSON")  # Any: it gets an attribute ValueError does not declare
    err.status = 500  # an HTTP library's error: its details must not leak into the ledger
    engine.fake.fail_next("acme.mail.send", err)
    run = engine.run("plain-error")
    assert engine.records(run, "op.called")[0]["error"] == {"name": "ValueError", "message": "reply was not JSON"}
