from runs.approvals import services as approvals
from runs.authoring import define_workflow
from runs.testing import make_user
from runs.tests.fixtures import REFUND


def run(ctx, input):
    ok = ctx.approval("Refund order 1", approver="bob")
    refund = ctx.acme.order.refund({"order_id": "1", "amount": 10})
    return {"refund": refund.refund_id, "by": ok.approved_by}


flow = define_workflow(name="smoke-approval", uses=[REFUND, "approval"], run=run)


def test_approval_flow(engine_for):
    engine = engine_for(flow)
    make_user("bob")
    run = engine.run("smoke-approval")
    assert run.status == "waiting"
    state = approvals.decide(run_id=run.id, decision="approve", by="bob", timeout=0)
    assert state["status"] == "pending"
    engine.drain()
    run.refresh_from_db()
    assert run.status == "finished", run.error
    assert run.result == {"refund": "re_1", "by": "bob"}
    assert engine.kinds(run) == ["run.started", "approval.requested", "approval.decided", "op.called", "run.finished"]
