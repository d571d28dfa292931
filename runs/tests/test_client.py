"""The client services: starting, idempotent starts, statuses, listing, results."""
from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from pydantic import BaseModel, field_validator

from connectors.errors import SanomaError, error_code
from runs import selectors, services
from runs.config.workflows import define_workflow
from runs.engine import clock
from runs.models import LedgerRecord, Run
from runs.tests.fixtures import GET, SEND


class OrderInput(BaseModel):
    order_id: str
    count: int = 1


def body(ctx, input):
    return {"order": ctx.acme.order.get({"order_id": input.order_id}).order_id}


orders = define_workflow(name="orders", input=OrderInput, uses=[GET], run=body)


class Amount(BaseModel):
    amount: int

    @field_validator("amount", mode="before")
    @classmethod
    def parse(cls, value):
        return int(value) * 100 if isinstance(value, str) else value


def seen(ctx, input):
    return {"amount": input.amount}


transforming = define_workflow(name="transforming", input=Amount, run=seen)


def waits(ctx, input):
    ctx.sleep(hours=1)
    return "done"


sleepy = define_workflow(name="sleepy", uses=["sleep"], run=waits)


def test_an_input_the_schema_refuses_starts_nothing(engine_for):
    engine = engine_for(orders)
    with pytest.raises(SanomaError) as refused:
        engine.start("orders", {"order_id": 5})
    assert refused.value.code == "invalid_input"
    assert refused.value.data["issues"][0]["path"] == ["order_id"]
    assert "The input does not match orders's schema" in refused.value.message
    assert not Run.objects.exists() and not LedgerRecord.objects.exists()


@pytest.mark.parametrize("who", [None, "", "   "])
def test_a_start_without_a_starter_is_refused(engine_for, who):
    engine = engine_for(orders)
    with pytest.raises(SanomaError) as refused:
        services.start(workflow="orders", input={"order_id": "1"}, started_by=who, config=engine.config)
    assert refused.value.code == "invalid_input" and "startedBy" in refused.value.message
    assert not Run.objects.exists()


def test_an_unknown_workflow_is_refused_with_an_issue_at_workflow(engine_for):
    engine = engine_for(orders)
    with pytest.raises(SanomaError) as refused:
        engine.start("nope")
    assert refused.value.code == "invalid_input"
    assert refused.value.data["issues"][0]["path"] == ["workflow"]


def test_starting_again_with_the_same_run_id_returns_the_run(engine_for):
    engine = engine_for(orders)
    first = engine.start("orders", {"order_id": "1"}, run_id="R1")
    again = engine.start("orders", {"order_id": "1"}, run_id="R1")
    assert again.id == first.id == "R1"
    assert LedgerRecord.objects.filter(run_id="R1", kind="run.started").count() == 1


def test_a_run_id_reused_with_another_input_or_starter_is_refused_naming_what_differs(engine_for):
    from runs.testing import make_user

    engine = engine_for(orders)
    make_user("bob", perms=["runs.start_workflow"])
    engine.start("orders", {"order_id": "1"}, run_id="R")
    with pytest.raises(SanomaError) as other_input:
        engine.start("orders", {"order_id": "2"}, run_id="R")
    assert other_input.value.message == "Run R already exists with a different input; use another run id"
    assert other_input.value.data["differs"] == ["input"]
    with pytest.raises(SanomaError) as other_actor:  # bob may not see alice's run: he learns only that it exists
        engine.start("orders", {"order_id": "1"}, run_id="R", by="bob")
    assert other_actor.value.code == "run_exists" and "differs" not in other_actor.value.data
    make_user("bob", perms=["runs.start_workflow", "runs.view_any_run"])  # an operator may see it
    with pytest.raises(SanomaError) as other_actor:
        engine.start("orders", {"order_id": "1"}, run_id="R", by="bob")
    assert other_actor.value.data["differs"] == ["startedBy"]


@pytest.mark.django_db(transaction=True)
def test_of_two_racing_starts_with_one_id_one_stands(engine_for):
    engine = engine_for(orders)
    results: list = []

    def racer(order_id):
        try:
            results.append(engine.start("orders", {"order_id": order_id}, run_id="RACE").input["order_id"])
        except SanomaError as err:
            results.append(err.code)
        finally:
            connection.close()

    threads = [threading.Thread(target=racer, args=(str(n),)) for n in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stood = Run.objects.get(pk="RACE").input["order_id"]
    assert sorted(results) == sorted([stood, "invalid_input"])
    assert LedgerRecord.objects.filter(run_id="RACE", kind="run.started").count() == 1


def test_the_body_gets_the_parsed_input_and_the_ledger_the_input_as_sent(engine_for):
    engine = engine_for(transforming)
    run = engine.run("transforming", {"amount": "12"})
    assert run.result == {"amount": 1200}
    assert engine.records(run, "run.started")[0]["input"] == {"amount": "12"}
    assert run.input == {"amount": "12"}


def test_statuses_through_a_run_life(engine_for):
    engine = engine_for(sleepy)
    run = engine.start("sleepy")
    assert run.status == "queued"
    engine.drain()
    run.refresh_from_db()
    assert (run.status, run.waiting_for) == ("waiting", "sleep")
    clock.advance(timedelta(hours=2))
    engine.drain()
    run.refresh_from_db()
    assert run.status == "finished" and run.ended_at is not None


def test_listing_filters_by_status_and_workflow_newest_first(engine_for):
    engine = engine_for(orders, sleepy)
    a = engine.run("orders", {"order_id": "1"})
    b = engine.run("sleepy")
    c = engine.run("orders", {"order_id": "2"})
    assert [r.id for r in selectors.list_runs().runs] == [c.id, b.id, a.id]
    assert [r.id for r in selectors.list_runs(status="waiting").runs] == [b.id]
    assert [r.id for r in selectors.list_runs(workflow="orders").runs] == [c.id, a.id]
    page = selectors.list_runs(limit=1, offset=1)
    assert [r.id for r in page.runs] == [b.id] and page.total == 3
    with pytest.raises(SanomaError, match="status must be one of"):
        selectors.list_runs(status="sleeping")
    with pytest.raises(SanomaError, match="limit must be"):
        selectors.list_runs(limit=0)


def test_result_and_ledger_of_a_missing_run_are_run_not_found(engine_for):
    engine_for(orders)
    assert selectors.get_run(run_id="missing") is None
    for call in (lambda: selectors.result(run_id="missing", timeout=0), lambda: selectors.ledger_of(run_id="missing")):
        with pytest.raises(SanomaError) as missing:
            call()
        assert missing.value.code == "run_not_found"
        assert missing.value.message == "No run missing, or you may not see it"


def test_result_times_out_with_run_running_and_returns_or_raises_once_ended(engine_for):
    engine = engine_for(orders, sleepy)
    waiting = engine.run("sleepy")
    with pytest.raises(SanomaError) as running:
        selectors.result(run_id=waiting.id, timeout=0.1)
    assert running.value.code == "run_running"
    done = engine.run("orders", {"order_id": "1"})
    assert selectors.result(run_id=done.id, timeout=0) == {"order": "1"}
    failed = engine.run("orders", {"order_id": "404"})
    with pytest.raises(SanomaError) as err:
        selectors.result(run_id=failed.id, timeout=0)
    assert error_code(err.value) == "driver_failed" and err.value.message == "no order 404"


def test_cancel_stops_a_waiting_run_and_refuses_an_ended_one(engine_for):
    engine = engine_for(orders, sleepy)
    waiting = engine.run("sleepy")
    cancelled = services.cancel(run_id=waiting.id, by="alice", reason="no longer needed")
    assert cancelled.status == "cancelled"
    clock.advance(timedelta(hours=2))
    engine.drain()
    assert Run.objects.get(pk=waiting.id).status == "cancelled"
    assert engine.kinds(waiting)[-1] == "run.cancelled"
    with pytest.raises(SanomaError) as ended:
        services.cancel(run_id=waiting.id, by="alice", reason="no longer needed")
    assert ended.value.code == "run_ended"
    with pytest.raises(SanomaError) as missing:
        services.cancel(run_id="nope", by="alice", reason="no longer needed")
    assert missing.value.code == "run_not_found"


def test_a_run_cancelled_mid_advance_makes_no_further_call(engine_for):
    def run(ctx, input):
        ctx.acme.mail.send({"to": "first"})
        services.cancel(run_id=ctx.run_id, by="alice", reason="no longer needed")  # an operator, at that very moment
        ctx.acme.mail.send({"to": "second"})
        return "not reached"

    wf = define_workflow(name="cancel-me", uses=[SEND], run=run)
    engine = engine_for(wf)
    started = engine.run("cancel-me")
    assert started.status == "cancelled"
    # The call made before the cancel landed is recorded; the next is never made: its checkpoint's
    # write (held while the workflow's own code ran) finds the run cancelled before the next call.
    assert [c["input"]["to"] for c in engine.fake.calls] == ["first"]
    assert [r["input"]["to"] for r in engine.records(started, "op.called")] == ["first"]
    assert "run.finished" not in engine.kinds(started)
