"""Pausing a connector, an operation or a workflow: held runs wait, then go on after the unpause."""
from __future__ import annotations

import pytest
from pydantic import BaseModel

from connectors.errors import SanomaError
from runs import pausing, selectors
from runs.authoring import define_workflow
from runs.models import Pause, Run, RunStatus
from runs.testing import make_user
from runs.tests.fixtures import GET, REFUND, SEND


class Order(BaseModel):
    order_id: str = "1"


def look_then_refund(ctx, input: Order):
    order = ctx.acme.order.get({"order_id": input.order_id})
    refund = ctx.acme.order.refund({"order_id": order.order_id, "amount": 1})
    return {"refund": refund.refund_id}


refund = define_workflow(name="refund", input=Order, uses=[GET, REFUND], run=look_then_refund)
mail = define_workflow(name="mail", uses=[SEND], run=lambda ctx, input: ctx.acme.mail.send({"to": "a"}).id)


@pytest.fixture
def ops(db):
    return make_user("ops", perms=["runs.pause", "runs.view_any_run", "runs.operate_runs"])


def refused(fn, **kwargs) -> SanomaError:
    with pytest.raises(SanomaError) as caught:
        fn(**kwargs)
    return caught.value


def test_a_paused_connector_holds_a_run_without_failing_it_and_the_unpause_lets_it_finish(engine_for, ops):
    engine = engine_for(refund)
    made = pausing.pause(kind="connector", target="acme", reason="the acme API is down", by="ops",
                         config=engine.config)
    run = engine.run("refund")
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "paused acme")
    assert engine.fake.calls == [] and run.error is None
    assert selectors.waiting_on(run) == {"kind": "paused", "until": None, "target": "acme", "reason":
                                         "the acme API is down", "by": "ops"}
    assert [r.id for r in pausing.held_runs(made)] == [run.id]
    pausing.unpause(kind="connector", target="acme", by="ops")
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED  # woken by the unpause
    engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED and len(engine.fake.calls) == 2
    record = Pause.objects.get()
    assert (record.paused_by, record.unpaused_by, record.active) == ("ops", "ops", False)


def test_a_paused_operation_holds_only_calls_of_that_operation(engine_for, ops):
    engine = engine_for(refund, mail)
    pausing.pause(kind="operation", target="acme.order.refund", reason="refunds double-charged", by="ops",
                  config=engine.config)
    held = engine.run("refund")
    free = engine.run("mail")
    assert (held.status, held.waiting_for) == (RunStatus.WAITING, "paused acme.order.refund")
    assert [c["op"] for c in engine.fake.calls] == ["acme.order.get", "acme.mail.send"]  # the read went through
    assert free.status == RunStatus.FINISHED
    pausing.unpause(kind="operation", target="acme.order.refund", by="ops")
    engine.drain()
    held.refresh_from_db()
    assert held.status == RunStatus.FINISHED


def test_a_paused_workflow_starts_nothing_new_and_its_runs_stay_queued(engine_for, ops):
    engine = engine_for(refund)
    pausing.pause(kind="workflow", target="refund", reason="pricing review", by="ops", config=engine.config)
    run = engine.run("refund")
    assert (run.status, run.waiting_for) == (RunStatus.QUEUED, "paused refund")
    assert engine.fake.calls == []
    engine.drain()  # nothing to do: the parked run is not picked up again
    pausing.unpause(kind="workflow", target="refund", by="ops")
    run.refresh_from_db()
    assert (run.status, run.waiting_for) == (RunStatus.QUEUED, "")
    engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED


@pytest.mark.parametrize(("kwargs", "code", "says"), [
    ({"kind": "vendor", "target": "acme", "reason": "x"}, "invalid_input", "connector, an operation or a workflow"),
    ({"kind": "connector", "target": "nope", "reason": "x"}, "invalid_input", "the connectors are acme"),
    ({"kind": "operation", "target": "acme.x.y", "reason": "x"}, "invalid_input", "acme.order.refund"),
    ({"kind": "connector", "target": "acme", "reason": " "}, "invalid_input", "needs a reason"),
])
def test_a_bad_pause_is_refused_naming_what_is_wrong(engine_for, ops, kwargs, code, says):
    engine = engine_for(refund)
    err = refused(pausing.pause, by="ops", config=engine.config, **kwargs)
    assert (err.code, says in err.message) == (code, True), err.message
    assert not Pause.objects.exists()


def test_pausing_twice_unpausing_what_is_not_paused_and_pausing_without_the_permission_are_refused(engine_for, ops):
    engine = engine_for(refund)
    pausing.pause(kind="connector", target="acme", reason="down", by="ops", config=engine.config)
    assert "already paused, by ops" in refused(pausing.pause, kind="connector", target="acme", reason="again",
                                               by="ops", config=engine.config).message
    assert "is not paused" in refused(pausing.unpause, kind="workflow", target="refund", by="ops").message
    assert refused(pausing.pause, kind="workflow", target="refund", reason="x", by="alice",
                   config=engine.config).code == "permission_denied"
    assert Pause.objects.count() == 1 and not Run.objects.exists()
