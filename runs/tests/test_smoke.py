from runs.authoring import define_workflow
from runs.tests.fixtures import GET, REFUND


def run(ctx, input):
    order = ctx.acme.order.get({"order_id": "1"})
    refund = ctx.acme.order.refund({"order_id": order.order_id, "amount": 10})
    return {"refund": refund.refund_id}


flow = define_workflow(name="smoke", uses=[GET, REFUND], run=run)


def test_a_run_finishes(engine_for):
    engine = engine_for(flow)
    run = engine.run("smoke")
    assert run.status == "finished", run.error
    assert run.result == {"refund": "re_1"}
    assert engine.kinds(run) == ["run.started", "op.called", "op.called", "run.finished"]
