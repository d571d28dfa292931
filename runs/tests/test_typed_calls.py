"""Typed calls through ctx: an operation called with its input model, returning its output model;
waits that parse what they read with `model=`; a child started from its definition with a model.
The workflows here give no `uses`: it is derived from their outlines."""
from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import BaseModel, Field

from connectors.errors import ConfigError
from runs import services
from runs.authoring import Ctx, define_workflow
from runs.engine import clock
from runs.models import LedgerRecord, RunStatus
from runs.tests.fixtures import SEND, Order, OrderRef, RefundIn, RefundOut


def with_models(ctx: Ctx, input: OrderRef) -> dict:
    order = ctx.acme.order.get(OrderRef(order_id=input.order_id))  # the input model itself
    refund = ctx.acme.order.refund(RefundIn(order_id=order.order_id, amount=order.total))
    again = ctx.acme.order.get({"order_id": input.order_id})  # or a dict, as before
    return {"order": type(order).__name__, "refund": type(refund).__name__, "refund_id": refund.refund_id,
            "same": again == order}


models = define_workflow(name="models", input=OrderRef, run=with_models)


def test_an_operation_takes_its_input_model_and_returns_its_output_model(engine_for):
    engine = engine_for(models)
    assert set(models.ops) == {"acme.order.get", "acme.order.refund"} and models.builtins == ()
    run = engine.run("models", {"order_id": "2"})
    assert run.status == RunStatus.FINISHED, run.error
    assert run.result == {"order": Order.__name__, "refund": RefundOut.__name__, "refund_id": "re_1", "same": True}
    called = [r.body for r in LedgerRecord.objects.filter(run_id=run.id, kind="op.called").order_by("seq")]
    assert [c["input"] for c in called] == [{"order_id": "2"}, {"order_id": "2", "amount": 5000},
                                            {"order_id": "2"}]
    assert engine.fake.state["refunds"][0]["amount"] == 5000


class Shipped(BaseModel):
    carrier: str
    tracking: str = Field(min_length=2)


def wait_typed(ctx: Ctx, input: OrderRef) -> dict:
    shipped = ctx.wait_message("shipped", model=Shipped, timeout=timedelta(days=1))
    raw = ctx.wait_message("noted")
    return {"kind": type(shipped).__name__, "tracking": shipped.tracking, "raw": raw}


typed_wait = define_workflow(name="typed-wait", input=OrderRef, run=wait_typed)


def send(run, topic, payload):
    return services.send_message(run_id=run.id, topic=topic, payload=payload, by="alice")


def test_wait_message_with_a_model_returns_that_model_and_the_same_on_replay(engine_for):
    engine = engine_for(typed_wait)
    assert typed_wait.builtins == ("wait_message",)
    run = engine.start("typed-wait", {"order_id": "1"})
    engine.drain()
    send(run, "shipped", {"carrier": "posti", "tracking": "JJ1"})
    engine.drain()  # reads it, then waits for "noted": the next advance replays the typed read
    send(run, "noted", {"n": 1})
    engine.drain()
    run.refresh_from_db()
    assert (run.status, run.result) == (RunStatus.FINISHED, {"kind": "Shipped", "tracking": "JJ1", "raw": {"n": 1}})


def test_a_message_the_model_refuses_fails_the_run_naming_the_field(engine_for):
    engine = engine_for(typed_wait)
    run = engine.start("typed-wait", {"order_id": "1"})
    send(run, "shipped", {"carrier": "posti", "tracking": "J"})
    engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.error["code"] == "invalid_input"
    assert run.error["message"].startswith("the message on 'shipped' does not match Shipped: tracking: ")
    # the message was read and recorded as sent; the model refused it afterwards, the same on any replay
    assert LedgerRecord.objects.filter(run_id=run.id, kind="message.received").count() == 1


class Child(BaseModel):
    order_id: str


class ChildOut(BaseModel):
    total: int


def child_body(ctx: Ctx, input: Child) -> dict:
    return {"total": ctx.acme.order.get({"order_id": input.order_id}).total}


child = define_workflow(name="child", input=Child, run=child_body)


def parent_body(ctx: Ctx, input: OrderRef) -> dict:
    started = ctx.start_run(child, Child(order_id=input.order_id))  # the definition and a model
    out = ctx.wait_run(started, model=ChildOut)
    return {"kind": type(out).__name__, "total": out.total}


parent = define_workflow(name="parent", input=OrderRef, run=parent_body)


def test_start_run_takes_the_definition_and_a_model_and_wait_run_a_model(engine_for):
    engine = engine_for(child, parent)
    assert parent.builtins == ("start_run", "wait_run")
    run = engine.run("parent", {"order_id": "2"})
    assert (run.status, run.result) == (RunStatus.FINISHED, {"kind": "ChildOut", "total": 5000}), run.error
    started = LedgerRecord.objects.get(run_id=run.id, kind="run.child_started")
    assert started.body["workflow"] == "child" and started.body["input"] == {"order_id": "2"}


def naps(ctx: Ctx, input: OrderRef) -> dict:
    ctx.sleep(seconds=5)
    first = ctx.now()
    results = ctx.all([lambda: ctx.acme.mail.send({"to": "a"}), lambda: ctx.acme.post.publish({"text": "t"})])
    ok = ctx.approval("Go on?", approver="alice")
    return {"at": first.isoformat(), "n": len(results), "by": ok.approved_by}


napping = define_workflow(name="napping", input=OrderRef, run=naps)


def test_derived_uses_hold_every_call_the_outline_draws_and_the_run_gets_them(engine_for):
    engine = engine_for(napping)
    assert napping.ops == ("acme.mail.send", "acme.post.publish")
    assert napping.builtins == ("sleep", "all", "approval")  # now() needs no listing
    run = engine.start("napping", {"order_id": "1"})
    engine.drain()
    clock.advance(timedelta(seconds=6))
    engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING and run.waiting_for == "approval"


def calls_an_unknown_op(ctx: Ctx, input: OrderRef) -> None:
    ctx.acme.order.gett({"order_id": "1"})


def test_a_derived_call_no_connector_declares_is_refused_with_the_config_naming_the_line(engine_for):
    with pytest.raises(ConfigError) as refused:
        engine_for(define_workflow(name="typo", input=OrderRef, run=calls_an_unknown_op))
    line = calls_an_unknown_op.__code__.co_firstlineno + 1
    assert (f'Workflow "typo" calls acme.order.gett ({__file__}:{line}), which no connector in the config '
            "declares") in str(refused.value)


def test_built_ins_in_a_given_uses_are_the_typed_ctx_methods_not_text(engine_for):
    limited = define_workflow(name="limited", input=OrderRef, run=naps,
                              uses=[SEND, "acme.post.publish", Ctx.sleep, Ctx.all, Ctx.approval])
    assert limited.ops == ("acme.mail.send", "acme.post.publish")
    assert limited.builtins == ("sleep", "all", "approval") and not limited.derived
    engine = engine_for(limited)
    run = engine.start("limited", {"order_id": "1"})
    engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING and run.waiting_for == "sleep"
    with pytest.raises(ValueError, match=r"uses lists <function Ctx.now"):
        define_workflow(name="nowish", run=naps, uses=[Ctx.now])
