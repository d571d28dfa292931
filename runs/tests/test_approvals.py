"""Approvals: requesting, deciding, refusing, withdrawing.

Decisions go through the services a person uses (`approvals.decide`, `withdraw`), and a worker
(`engine.drain()`) applies them to the run, as in production.
"""
from __future__ import annotations

import time
from datetime import timedelta
from types import SimpleNamespace

import pytest
from pydantic import BaseModel

from connectors.errors import SanomaError, error_code
from runs import selectors, services
from runs.approvals import selectors as approval_selectors
from runs.approvals import services as approvals
from runs.approvals.permissions import Principal
from runs.authoring import define_workflow
from runs.engine import clock, faults
from runs.engine.advance import advance
from runs.models import Approval, DecisionMessage, Run
from runs.policies import allow, approve, approved_for, define_policy, deny
from runs.testing import make_user
from runs.tests.fixtures import GET, REFUND, SEND

# -- workflows and helpers -------------------------------------------------------------------------


class AskInput(BaseModel):
    approver: str = "marketing-lead"


def ask_then_refund(ctx, input):
    ok = ctx.approval("Refund order 1", approver=input.approver,
                      links=["https://shop.example.com/orders/1"], details={"amount": 10})
    refund = ctx.acme.order.refund({"order_id": "1", "amount": 10})
    return {"refund": refund.refund_id, "by": ok.approved_by, "note": ok.note}


asking = define_workflow(name="asking", input=AskInput, uses=[REFUND, "approval"], run=ask_then_refund)


def two_approvals(ctx, input):
    first = ctx.approval("First", approver="bob")
    second = ctx.approval("Second", approver="bob")
    return {"first": first.approved_by, "second": second.approved_by}


twice = define_workflow(name="twice", uses=["approval"], run=two_approvals)


def approve_then_sleep(ctx, input):
    ctx.approval("Go?", approver="bob")
    ctx.sleep(hours=1)
    return {"ok": True}


then_sleep = define_workflow(name="then-sleep", uses=["approval", "sleep"], run=approve_then_sleep)


def hold_money(call):
    if call.effect != "money" or approved_for(call.run.approvals, call.op["id"], "finance-lead"):
        return allow()
    return approve("finance-lead")


def hold_money_for_group(call):
    if call.effect != "money" or approved_for(call.run.approvals, call.op["id"], {"group": "finance"}):
        return allow()
    return approve({"group": "finance"})


def get_refund_mail(ctx, input):
    order = ctx.acme.order.get({"order_id": "1"})
    refund = ctx.acme.order.refund({"order_id": order.order_id, "amount": 10})
    note = ctx.acme.mail.send({"to": "customer", "text": "refunded"})
    return {"refund": refund.refund_id, "mail": note.id}


shop_flow = define_workflow(name="shop-flow", uses=[GET, REFUND, SEND], run=get_refund_mail)


def pending(run: Run) -> list[Approval]:
    return list(Approval.objects.filter(run=run, status="pending").order_by("seq"))


def state_of(run: Run, approval_id: str = "approval-1") -> dict:
    return next(a for a in approval_selectors.approvals_of(run_id=run.id) if a["id"] == approval_id)


def refresh(run: Run) -> Run:
    run.refresh_from_db()
    return run


@pytest.fixture
def worker_while_waiting(monkeypatch):
    """While `decide` waits for the run to read the decision, a worker advances runs (in this
    thread and transaction, as the test database allows)."""

    def start(engine):
        def sleep(seconds):
            engine.drain()

        monkeypatch.setattr(approvals, "time", SimpleNamespace(monotonic=time.monotonic, sleep=sleep))

    return start


@pytest.fixture
def people(db):
    return SimpleNamespace(
        lead=make_user("marketing-lead"),
        intern=make_user("intern"),
        bob=make_user("bob", groups=["sales"]),
        carol=make_user("carol", groups=["marketing"]),
        marketing=make_user("marketing"),
    )


# -- 43: bad requests ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, says",
    [
        ({}, "needs an approver"),
        ({"approver": ""}, "needs an approver"),
        ({"approver": {"group": ""}}, "needs an approver"),
        ({"approver": "bob", "covers": "acme.order.refund"}, "covers must be a list of operations"),
        ({"approver": "bob", "covers": ["refund"]}, "covers must be a list of operations"),
        ({"approver": "bob", "covers": [42]}, "covers must be a list of operations"),
        ({"approver": "bob", "links": "https://x"}, "links must be a list of strings"),
        ({"approver": "bob", "links": [1]}, "links must be a list of strings"),
    ],
)
def test_a_bad_approval_request_fails_before_anything_is_recorded(engine_for, kwargs, says):
    def body(ctx, input):
        ctx.approval("Ship it", **kwargs)

    engine = engine_for(define_workflow(name="bad-ask", uses=["approval"], run=body))
    run = engine.run("bad-ask")
    assert run.status == "failed"
    assert run.error["code"] == "invalid_input"
    assert says in run.error["message"]
    assert run.error["data"]["title"] == "Ship it"
    assert Approval.objects.filter(run=run).count() == 0
    assert approval_selectors.approvals_of(run_id=run.id) == []
    assert engine.kinds(run) == ["run.started", "run.failed"]


def test_a_workflow_approval_is_published_with_everything_it_asked(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking")
    assert run.status == "waiting" and run.waiting_for == "approval"
    (state,) = approval_selectors.approvals_of(run_id=run.id)
    assert state["id"] == "approval-1"
    assert state["title"] == "Refund order 1"
    assert state["approver"] == "marketing-lead"
    assert state["requested_by"] == "workflow"
    assert state["covers"] == []  # a workflow approval covers only what it names
    assert state["links"] == ["https://shop.example.com/orders/1"]
    assert state["details"] == {"amount": 10}
    assert state["status"] == "pending" and state["refused"] == []
    assert "decided_by" not in state and "op" not in state
    (record,) = engine.records(run, "approval.requested")
    assert record["id"] == f"{run.id}:approval.requested:approval-1"
    assert {k: record[k] for k in ("approval", "title", "approver", "requested_by", "covers")} == {
        "approval": "approval-1", "title": "Refund order 1", "approver": "marketing-lead",
        "requested_by": "workflow", "covers": []}
    assert engine.fake.calls == []


# -- 44, 46: who may decide ---------------------------------------------------------------------------


def test_a_non_approver_is_refused_and_nothing_is_sent(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking")
    with pytest.raises(SanomaError) as caught:  # the intern may not even see the run
        approvals.decide(run_id=run.id, decision="approve", by="intern", timeout=0)
    assert error_code(caught.value) == "run_not_found"
    assert str(caught.value) == f"No run {run.id}, or you may not see it"
    make_user("intern", perms=["runs.view_any_run"])  # now she may see it: she hears who decides
    with pytest.raises(SanomaError) as caught:
        approvals.decide(run_id=run.id, decision="approve", by="intern", timeout=0)
    assert error_code(caught.value) == "not_approver"
    assert str(caught.value) == "intern is not the approver; marketing-lead is (approval-1)"
    assert caught.value.data["approver"] == "marketing-lead"
    assert caught.value.data["approval_id"] == "approval-1"
    assert DecisionMessage.objects.count() == 0
    engine.drain()
    assert refresh(run).status == "waiting"
    assert state_of(run)["status"] == "pending"


def test_a_group_approver_takes_its_members_only(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking", {"approver": "group:marketing"})
    for who in ("bob", "marketing"):  # they may see the run (else it is run_not_found), not decide it
        make_user(who, perms=["runs.view_any_run"])

    with pytest.raises(SanomaError) as caught:
        approvals.decide(run_id=run.id, decision="approve", by="bob", timeout=0)
    assert error_code(caught.value) == "not_approver"
    assert str(caught.value) == "bob is not in group marketing (approval-1)"

    with pytest.raises(SanomaError) as caught:  # a person named like the group is not in it
        approvals.decide(run_id=run.id, decision="approve", by="marketing", timeout=0)
    assert error_code(caught.value) == "not_approver"
    assert str(caught.value) == "marketing is not in group marketing (approval-1)"
    assert DecisionMessage.objects.count() == 0

    approvals.decide(run_id=run.id, decision="approve", by="carol", note="go", timeout=0)
    engine.drain()
    assert refresh(run).status == "finished", run.error
    state = state_of(run)
    assert state["status"] == "approved" and state["decided_by"] == "carol" and state["note"] == "go"
    assert run.result == {"refund": "re_1", "by": "carol", "note": "go"}


def test_a_group_approver_given_as_a_mapping(engine_for, people):
    def body(ctx, input):
        return ctx.approval("Ship", approver={"group": "marketing"}).approved_by

    engine = engine_for(define_workflow(name="group-map", uses=["approval"], run=body))
    run = engine.run("group-map")
    assert state_of(run)["approver"] == "group:marketing"
    approvals.decide(run_id=run.id, decision="approve", by="carol", timeout=0)
    engine.drain()
    assert refresh(run).result == "carol"


# -- 45: a refused message sent straight to the run ------------------------------------------------------


def test_a_message_from_a_non_approver_is_recorded_as_refused_and_the_approval_stays_pending(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking")
    approval = Approval.objects.get(run=run)
    approvals.send_decision(approval=approval, decision="approve", by=Principal("intern"), message_id="m-intern")
    engine.drain()

    assert refresh(run).status == "waiting"
    state = state_of(run)
    assert state["status"] == "pending"
    (refused,) = state["refused"]
    assert refused["by"] == "intern"
    assert refused["id"] == "m-intern"
    assert refused["reason"] == "intern is not the approver; marketing-lead is"
    assert isinstance(refused["at"], int)
    (record,) = engine.records(run, "approval.refused")
    assert record["id"] == f"{run.id}:approval.refused:approval-1:refused:1"
    assert (record["approval"], record["by"], record["reason"]) == (
        "approval-1", "intern", "intern is not the approver; marketing-lead is")
    assert engine.records(run, "approval.decided") == []

    # a second refused message gets the next number, and the approver can still decide
    approvals.send_decision(approval=approval, decision="maybe", by=Principal("marketing-lead"), message_id="m-maybe")
    engine.drain()
    ids = [r["id"] for r in engine.records(run, "approval.refused")]
    assert ids == [f"{run.id}:approval.refused:approval-1:refused:1", f"{run.id}:approval.refused:approval-1:refused:2"]
    assert len(state_of(run)["refused"]) == 2
    approvals.decide(run_id=run.id, decision="approve", by="marketing-lead", timeout=0)
    engine.drain()
    assert refresh(run).status == "finished", run.error


def test_the_ledger_names_who_decided_refused_or_withdrew_not_the_starter(engine_for, people):
    engine = engine_for(asking, twice)
    run = engine.run("asking")  # started by alice
    approval = Approval.objects.get(run=run)
    approvals.send_decision(approval=approval, decision="approve", by=Principal("intern"), message_id="m-intern")
    engine.drain()
    approvals.decide(run_id=run.id, decision="approve", by="marketing-lead", timeout=0)
    engine.drain()
    actors = {r["type"]: r["actor"] for r in engine.records(run)}
    assert actors["run.started"] == "alice" and actors["op.called"] == "alice"
    assert actors["approval.refused"] == "intern"
    assert actors["approval.decided"] == "marketing-lead"

    make_user("olga", perms=["runs.operate_runs", "runs.view_any_run"])
    withdrawn = engine.run("twice")
    approvals.withdraw(run_id=withdrawn.id, by="olga", reason="not needed")
    (record,) = engine.records(withdrawn, "approval.withdrawn")
    assert record["actor"] == "olga" and record["by"] == "olga"


def test_a_refused_message_makes_decide_answer_not_approver(engine_for, people):
    """A sender `decide` let through (the user exists and holds the permission) whom the run then
    refuses: the run's word stands and `decide` reports it."""
    engine = engine_for(asking)
    run = engine.run("asking", {"approver": "group:marketing"})
    carol = Principal("carol", groups=(), user=people.carol)  # carol as she was before joining marketing
    approval = Approval.objects.get(run=run)
    sent = approvals.send_decision(approval=approval, decision="approve", by=carol)
    engine.drain()
    with pytest.raises(SanomaError) as caught:
        approvals.wait_for_decision(approval=approval, message_id=sent, timeout=0)
    assert error_code(caught.value) == "not_approver"
    assert "carol is not in group marketing" in str(caught.value)


# -- 47: a policy hold on a group -------------------------------------------------------------------------


def test_a_policy_hold_on_a_group_is_titled_with_the_group(engine_for):
    engine = engine_for(shop_flow, policy=define_policy(hold_money_for_group, version="v1"))
    make_user("fin", groups=["finance"])
    run = engine.run("shop-flow")
    (state,) = approval_selectors.approvals_of(run_id=run.id)
    assert state["title"] == "acme.order.refund needs group finance"
    assert state["approver"] == "group:finance"
    assert state["requested_by"] == "policy"
    assert state["op"] == "acme.order.refund"
    assert state["input"] == {"order_id": "1", "amount": 10}
    assert state["op_seq"] == 2
    assert state["covers"] == ["acme.order.refund"]
    (pending_one,) = approval_selectors.pending_for(principal="fin")
    assert pending_one.approval_id == "approval-1"

    approvals.decide(run_id=run.id, decision="approve", by="fin", timeout=0)
    engine.drain()
    assert refresh(run).status == "finished", run.error


def test_a_policy_hold_title_from_the_policy(engine_for):
    policy = define_policy(
        lambda call: approve("finance-lead", "Refund over the limit") if call.effect == "money"
        and not approved_for(call.run.approvals, call.op["id"], "finance-lead") else allow(),
        version="v1",
    )
    engine = engine_for(shop_flow, policy=policy)
    run = engine.run("shop-flow")
    assert state_of(run)["title"] == "Refund over the limit"


# -- 48, 49: refusals before sending ----------------------------------------------------------------------


def test_decided_twice_unknown_id_bad_decision_unknown_run(engine_for, people):
    engine = engine_for(then_sleep)
    run = engine.run("then-sleep")
    approvals.decide(run_id=run.id, decision="approve", by="bob", timeout=0)
    engine.drain()
    assert refresh(run).status == "waiting" and run.waiting_for == "sleep"
    sent = DecisionMessage.objects.count()

    with pytest.raises(SanomaError) as caught:
        approvals.decide(run_id=run.id, decision="reject", by="bob", approval_id="approval-1", timeout=0)
    assert error_code(caught.value) == "already_decided"
    assert caught.value.data["status"] == "approved" and caught.value.data["decided_by"] == "bob"
    assert "bob" in str(caught.value)

    with pytest.raises(SanomaError) as caught:  # nothing pending any more
        approvals.decide(run_id=run.id, decision="approve", by="bob", timeout=0)
    assert error_code(caught.value) == "no_pending_approval"

    with pytest.raises(SanomaError) as caught:
        approvals.decide(run_id=run.id, decision="approve", by="bob", approval_id="approval-9", timeout=0)
    assert error_code(caught.value) == "no_pending_approval"
    assert "approval-9" in str(caught.value)

    with pytest.raises(SanomaError) as caught:
        approvals.decide(run_id=run.id, decision="maybe", by="bob", timeout=0)
    assert error_code(caught.value) == "invalid_input"
    assert caught.value.data["issues"][0]["path"] == ["decision"]

    with pytest.raises(SanomaError) as caught:
        approvals.decide(run_id="no-such-run", decision="approve", by="bob", timeout=0)
    assert error_code(caught.value) == "run_not_found"
    assert str(caught.value) == "No run no-such-run, or you may not see it"

    assert DecisionMessage.objects.count() == sent  # none of these sent anything


@pytest.mark.parametrize("by", ["", "   ", None, 42])
def test_a_decision_without_a_sender_is_invalid_input(engine_for, people, by):
    engine = engine_for(asking)
    run = engine.run("asking")
    with pytest.raises(SanomaError) as caught:
        approvals.decide(run_id=run.id, decision="approve", by=by, timeout=0)
    assert error_code(caught.value) == "invalid_input"
    assert DecisionMessage.objects.count() == 0


def _ended(engine, how: str) -> Run:
    if how == "finished":
        run = engine.run("then-sleep")
        approvals.decide(run_id=run.id, decision="approve", by="bob", timeout=0)
        engine.drain()
        clock.advance(timedelta(hours=2))
        engine.drain()
    elif how == "failed":
        run = engine.run("then-sleep")
        approvals.decide(run_id=run.id, decision="reject", by="bob", timeout=0)
        engine.drain()
    else:
        run = engine.run("then-sleep")
        services.cancel(run_id=run.id, by="alice", reason="no longer needed")
    return refresh(run)


@pytest.mark.parametrize("how", ["finished", "failed", "cancelled"])
def test_an_ended_run_takes_no_more_decisions(engine_for, people, how):
    engine = engine_for(then_sleep)
    run = _ended(engine, how)
    assert run.status == how
    sent = DecisionMessage.objects.count()
    with pytest.raises(SanomaError) as caught:
        approvals.decide(run_id=run.id, decision="approve", by="bob", timeout=0)
    assert error_code(caught.value) == "run_ended"
    assert str(caught.value) == f"Run {run.id} has {how}; it takes no more decisions"
    assert caught.value.data["status"] == how
    assert DecisionMessage.objects.count() == sent


# -- 50: no worker running --------------------------------------------------------------------------------


def test_without_a_worker_decide_answers_pending_and_the_decision_applies_later(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking")

    started = time.monotonic()
    state = approvals.decide(run_id=run.id, decision="approve", by="marketing-lead", note="ok",
                             message_id="msg-1", timeout=0.3)
    assert time.monotonic() - started >= 0.3  # it waited for the run, up to the timeout
    assert state["status"] == "pending" and state["id"] == "approval-1"
    # the same message sent again (a retried request) is queued once
    again = approvals.decide(run_id=run.id, decision="approve", by="marketing-lead", note="ok",
                             message_id="msg-1", timeout=0)
    assert again["status"] == "pending"
    assert DecisionMessage.objects.filter(approval__run=run).count() == 1
    assert refresh(run).status == "queued"  # the decision made the run runnable

    engine.drain()  # the worker is back
    assert refresh(run).status == "finished", run.error
    state = state_of(run)
    assert state["status"] == "approved"
    assert state["decided_with"] == "msg-1"
    assert state["decided_by"] == "marketing-lead" and state["note"] == "ok"
    decided = engine.records(run, "approval.decided")
    assert len(decided) == 1
    assert {k: decided[0][k] for k in ("approval", "decision", "by", "note")} == {
        "approval": "approval-1", "decision": "approve", "by": "marketing-lead", "note": "ok"}
    assert decided[0]["id"] == f"{run.id}:approval.decided:approval-1"


def test_a_message_id_sent_twice_after_it_applied_is_not_decided_twice(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking")
    approval = Approval.objects.get(run=run)
    lead = Principal("marketing-lead", user=people.lead)
    approvals.send_decision(approval=approval, decision="approve", by=lead, message_id="m")
    engine.drain()
    approvals.send_decision(approval=approval, decision="approve", by=lead, message_id="m")
    engine.drain()
    assert len(engine.records(run, "approval.decided")) == 1
    assert state_of(run)["decided_with"] == "m"
    assert refresh(run).status == "finished"


# -- 51: concurrent decisions (the process race is in test_decide_race.py) ----------------------------------


@pytest.mark.parametrize("second", ["carol", "dave"], ids=["same-person-two-notes", "two-people"])
def test_of_two_decisions_sent_before_the_run_reads_them_the_first_wins(engine_for, second):
    make_user("carol", groups=["marketing"])
    make_user("dave", groups=["marketing"])
    engine = engine_for(asking)
    run = engine.run("asking", {"approver": "group:marketing"})

    first = approvals.decide(run_id=run.id, decision="approve", by="carol", note="first",
                             message_id="m-1", timeout=0)
    other = approvals.decide(run_id=run.id, decision="reject", by=second, note="second",
                             message_id="m-2", timeout=0)
    assert first["status"] == other["status"] == "pending"  # both were sent
    engine.drain()

    approval = Approval.objects.get(run=run)
    assert approvals.wait_for_decision(approval=approval, message_id="m-1", timeout=0)["decided_by"] == "carol"
    with pytest.raises(SanomaError) as caught:
        approvals.wait_for_decision(approval=approval, message_id="m-2", timeout=0)
    assert error_code(caught.value) == "already_decided"
    assert caught.value.data["decided_by"] == "carol" and caught.value.data["status"] == "approved"
    assert "carol" in str(caught.value)
    assert len(engine.records(run, "approval.decided")) == 1
    assert refresh(run).status == "finished", run.error
    assert run.result["note"] == "first"


# -- 52: one message id on two approvals ---------------------------------------------------------------------


def test_one_message_id_reused_on_two_approvals_of_a_run_delivers_both(engine_for, people):
    engine = engine_for(twice)
    run = engine.run("twice")
    approvals.decide(run_id=run.id, decision="approve", by="bob", message_id="same", timeout=0)
    engine.drain()
    assert refresh(run).status == "waiting"
    approvals.decide(run_id=run.id, decision="approve", by="bob", message_id="same", timeout=0)
    engine.drain()
    assert refresh(run).status == "finished", run.error
    assert run.result == {"first": "bob", "second": "bob"}
    states = approval_selectors.approvals_of(run_id=run.id)
    assert [(s["id"], s["status"], s["decided_with"]) for s in states] == [
        ("approval-1", "approved", "same"), ("approval-2", "approved", "same")]


# -- 53: what decide returns --------------------------------------------------------------------------------


def test_a_successful_decide_returns_the_runs_published_state(engine_for, worker_while_waiting):
    engine = engine_for(shop_flow, policy=define_policy(hold_money, version="v1"))
    make_user("finance-lead")
    run = engine.run("shop-flow")
    worker_while_waiting(engine)

    returned = approvals.decide(run_id=run.id, decision="approve", by="finance-lead", note="fine", timeout=5)
    assert returned["status"] == "approved"
    assert returned["decided_by"] == "finance-lead"
    assert returned["note"] == "fine"
    assert returned["covers"] == ["acme.order.refund"]
    assert returned["decided_at"]
    published = state_of(run)
    for key in ("status", "decided_by", "decided_at", "note", "covers", "decided_with"):
        assert returned[key] == published[key], key
    assert refresh(run).status == "finished", run.error


def test_a_rejection_returns_rejected_and_fails_the_run(engine_for, worker_while_waiting):
    engine = engine_for(shop_flow, policy=define_policy(hold_money, version="v1"))
    make_user("finance-lead")
    run = engine.run("shop-flow")
    worker_while_waiting(engine)
    returned = approvals.decide(run_id=run.id, decision="reject", by="finance-lead", note="no", timeout=5)
    assert returned["status"] == "rejected" and returned["decided_by"] == "finance-lead"
    assert refresh(run).status == "failed"
    assert run.error["code"] == "approval_rejected"
    assert run.error["data"]["approval_id"] == "approval-1" and run.error["data"]["note"] == "no"
    assert [c["op"] for c in engine.fake.calls] == ["acme.order.get"]


def catching(ctx, input):
    try:
        ctx.approval("Go?", approver="bob")
    except Exception as err:
        return {"code": error_code(err)}
    return {"code": None}


catches = define_workflow(name="catches", uses=["approval"], run=catching)


def test_a_rejected_workflow_approval_can_be_caught(engine_for, people):
    engine = engine_for(catches)
    run = engine.run("catches")
    approvals.decide(run_id=run.id, decision="reject", by="bob", timeout=0)
    engine.drain()
    assert refresh(run).status == "finished" and run.result == {"code": "approval_rejected"}


# -- 54: withdrawal ------------------------------------------------------------------------------------------


def test_the_starter_withdraws_and_the_run_fails_approval_withdrawn(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking")
    state = approvals.withdraw(run_id=run.id, by="alice", reason="not needed")
    assert state["status"] == "withdrawn" and state["decided_by"] == "alice"
    engine.drain()
    assert refresh(run).status == "failed"
    assert run.error["code"] == "approval_withdrawn"
    assert "withdrawn by alice" in run.error["message"]
    assert engine.fake.calls == []
    kinds = engine.kinds(run)
    assert kinds == ["run.started", "approval.requested", "approval.withdrawn", "run.failed"]
    with pytest.raises(SanomaError) as caught:  # the approver comes too late
        approvals.decide(run_id=run.id, decision="approve", by="marketing-lead", timeout=0)
    assert error_code(caught.value) == "run_ended"


def test_a_caught_withdrawal_lets_the_run_go_on(engine_for, people):
    engine = engine_for(catches)
    run = engine.run("catches")
    approvals.withdraw(run_id=run.id, by="alice")
    engine.drain()
    assert refresh(run).status == "finished", run.error
    assert run.result == {"code": "approval_withdrawn"}


def test_only_the_starter_or_an_operator_may_withdraw(engine_for, people):
    engine = engine_for(asking)
    # An operator acts only on runs they may see: operate_runs goes with view_any_run.
    make_user("ops", perms=["runs.operate_runs", "runs.view_any_run"])
    run = engine.run("asking")

    with pytest.raises(SanomaError) as caught:  # the approver sees the run, but may not withdraw
        approvals.withdraw(run_id=run.id, by="marketing-lead")
    assert error_code(caught.value) == "permission_denied"
    assert "marketing-lead may not withdraw" in str(caught.value)
    for who in ("bob", "stranger"):  # who may not see the run learns nothing of it
        with pytest.raises(SanomaError) as caught:
            approvals.withdraw(run_id=run.id, by=who)
        assert error_code(caught.value) == "run_not_found", who
    assert state_of(run)["status"] == "pending"
    assert engine.records(run, "approval.withdrawn") == []

    state = approvals.withdraw(run_id=run.id, by="ops")
    assert state["status"] == "withdrawn" and state["decided_by"] == "ops"
    engine.drain()
    error = refresh(run).error
    assert error is not None
    assert error["code"] == "approval_withdrawn"


def test_withdrawing_a_policy_hold_fails_the_held_call(engine_for):
    engine = engine_for(shop_flow, policy=define_policy(hold_money, version="v1"))
    make_user("finance-lead")
    run = engine.run("shop-flow")
    approvals.withdraw(run_id=run.id, by="alice")
    engine.drain()
    assert refresh(run).status == "failed" and run.error["code"] == "approval_withdrawn"
    assert [c["op"] for c in engine.fake.calls] == ["acme.order.get"]
    refund = engine.records(run, "op.called")[1]
    assert refund["approval"] == "approval-1" and refund["error"]["code"] == "approval_withdrawn"


def test_a_decided_approval_cannot_be_withdrawn(engine_for, people):
    engine = engine_for(then_sleep)
    run = engine.run("then-sleep")
    approvals.decide(run_id=run.id, decision="approve", by="bob", timeout=0)
    engine.drain()
    with pytest.raises(SanomaError) as caught:
        approvals.withdraw(run_id=run.id, by="alice", approval_id="approval-1")
    assert error_code(caught.value) == "already_decided"
    assert state_of(run)["status"] == "approved"


def test_a_withdrawal_stands_over_a_decision_the_run_has_not_read(engine_for, people):
    """The approver's message was queued (decide answered pending) but no worker read it before the
    starter withdrew: the withdrawal stands and the queued decision is ignored, never half-applied."""
    engine = engine_for(asking)
    run = engine.run("asking")
    approvals.decide(run_id=run.id, decision="approve", by="marketing-lead", timeout=0)
    approvals.withdraw(run_id=run.id, by="alice")
    engine.drain()
    assert refresh(run).status == "failed" and run.error["code"] == "approval_withdrawn"
    assert engine.records(run, "approval.decided") == []
    assert engine.fake.calls == []


# -- 61: listing waiting runs --------------------------------------------------------------------------------


def test_a_run_waiting_on_an_approval_is_listed_as_waiting_then_finished(engine_for, people):
    engine = engine_for(asking, shop_flow)
    run = engine.run("asking")
    done = engine.run("shop-flow")
    assert done.status == "finished"

    waiting = selectors.list_runs(status="waiting")
    assert run.id in [r.id for r in waiting.runs]
    assert all(r.status == "waiting" for r in waiting.runs)
    assert done.id not in [r.id for r in waiting.runs]

    approvals.decide(run_id=run.id, decision="approve", by="marketing-lead", timeout=0)
    engine.drain()
    assert run.id not in [r.id for r in selectors.list_runs(status="waiting").runs]
    assert run.id not in [r.id for r in selectors.list_runs(status="queued").runs]
    finished = selectors.list_runs(status="finished")
    assert {run.id, done.id} <= {r.id for r in finished.runs}
    assert all(r.status == "finished" for r in finished.runs)


# -- 64: a denied run's result ----------------------------------------------------------------------------------


def test_the_result_of_a_denied_run_keeps_policy_denied(engine_for):
    engine = engine_for(shop_flow, policy=define_policy(
        lambda call: deny("no refunds today") if call.effect == "money" else allow(), version="v1"))
    run = engine.run("shop-flow")
    with pytest.raises(SanomaError) as caught:
        selectors.result(run_id=run.id, timeout=0)
    assert error_code(caught.value) == "policy_denied"
    assert str(caught.value) == "acme.order.refund was denied by policy: no refunds today"
    assert caught.value.data == {"op": "acme.order.refund", "reason": "no refunds today"}


def test_the_result_of_a_rejected_run_keeps_approval_rejected(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking")
    approvals.decide(run_id=run.id, decision="reject", by="marketing-lead", note="no", timeout=0)
    engine.drain()
    with pytest.raises(SanomaError) as caught:
        selectors.result(run_id=run.id, timeout=0)
    assert error_code(caught.value) == "approval_rejected"
    assert caught.value.data["by"] == "marketing-lead"


# -- 65, 66: the ledger ----------------------------------------------------------------------------------------


def test_the_ledger_of_a_held_call_runs_in_order_with_unique_ids(engine_for):
    engine = engine_for(shop_flow, policy=define_policy(hold_money, version="v1"))
    make_user("finance-lead")
    run = engine.run("shop-flow")
    approvals.decide(run_id=run.id, decision="approve", by="finance-lead", timeout=0)
    engine.drain()
    assert refresh(run).status == "finished", run.error

    records = engine.records(run)
    assert [r["type"] for r in records] == [
        "run.started", "op.called", "op.called", "approval.requested", "approval.decided", "op.called", "run.finished"]
    # the held refund is numbered before its approval (its seq was taken first) ...
    assert [r["op"] for r in records if r["type"] == "op.called"] == [
        "acme.order.get", "acme.order.refund", "acme.mail.send"]
    seqs = [r["seq"] for r in records]
    assert seqs == sorted(seqs)
    assert records[2]["seq"] < records[3]["seq"]
    ids = [r["id"] for r in records]
    assert len(ids) == len(set(ids))
    assert ids[3] == f"{run.id}:approval.requested:approval-1"
    assert ids[4] == f"{run.id}:approval.decided:approval-1"
    for record in records:
        # The actor is who acted: the decider on approval.decided, the starter on the rest.
        actor = "finance-lead" if record["type"] == "approval.decided" else "alice"
        assert record["v"] == 1 and record["actor"] == actor and record["workflow"] == "shop-flow"
        assert record["run_id"] == run.id


class WorkerKilled(BaseException):
    """The worker process dies: nothing after this point of the advance happens."""


def test_a_second_worker_advancing_mid_approval_duplicates_nothing(engine_for):
    engine = engine_for(shop_flow, policy=define_policy(hold_money, version="v1"))
    make_user("finance-lead")
    run = engine.run("shop-flow")
    before = engine.records(run)

    # a restarted worker (another id) picks the run up again while it still waits
    Run.objects.filter(pk=run.pk).update(status="queued")
    assert advance(run.id, worker_id="worker-2", config=engine.config) == "waiting"
    assert engine.records(run) == before
    assert Approval.objects.filter(run=run).count() == 1
    assert [c["op"] for c in engine.fake.calls] == ["acme.order.get"]


def test_a_worker_killed_after_the_decision_applied_is_recovered_without_duplicates(engine_for):
    engine = engine_for(shop_flow, policy=define_policy(hold_money, version="v1"))
    make_user("finance-lead")
    run = engine.run("shop-flow")
    approvals.decide(run_id=run.id, decision="approve", by="finance-lead", timeout=0)

    # worker-1 applies the decision, calls the vendor, and dies before recording the call
    faults.arm("after_driver_call", WorkerKilled())
    with pytest.raises(WorkerKilled):
        advance(run.id, worker_id="worker-1", config=engine.config)
    assert refresh(run).status == "running" and run.lease_owner == "worker-1"
    assert len(engine.records(run, "approval.decided")) == 1

    # its lease runs out; worker-2 recovers the run
    assert advance(run.id, worker_id="worker-2", config=engine.config) == "skipped"  # the lease still holds
    clock.advance(timedelta(minutes=5))
    assert advance(run.id, worker_id="worker-2", config=engine.config) == "finished"

    records = engine.records(run)
    ids = [r["id"] for r in records]
    assert len(ids) == len(set(ids))
    assert [r["type"] for r in records] == [
        "run.started", "op.called", "op.called", "approval.requested", "approval.decided", "op.called", "run.finished"]
    # the repeated vendor call carried the same idempotency key: one refund happened
    refunds = [c for c in engine.fake.calls if c["op"] == "acme.order.refund"]
    assert len({c["idempotency_key"] for c in refunds}) == 1
    assert len(engine.fake.state["refunds"]) == 1
    assert Approval.objects.get(run=run).status == "approved"
    assert DecisionMessage.objects.filter(approval__run=run, applied=True).count() == 1


def test_a_hold_inside_ctx_all_carries_the_group_and_the_later_member_waits(engine_for):
    def body(ctx, input):
        return [r.model_dump() for r in ctx.all([
            lambda: ctx.acme.order.refund({"order_id": "1", "amount": 10}),
            lambda: ctx.acme.mail.send({"to": "customer", "text": "refunded"}),
        ])]

    flow = define_workflow(name="fan-out", uses=[REFUND, SEND, "all"], run=body)
    engine = engine_for(flow, policy=define_policy(hold_money, version="v1"))
    make_user("finance-lead")
    run = engine.run("fan-out")
    assert run.status == "waiting"
    assert engine.fake.calls == []  # the mail waits behind the held refund
    approvals.decide(run_id=run.id, decision="approve", by="finance-lead", timeout=0)
    engine.drain()
    assert refresh(run).status == "finished", run.error
    assert run.result == [{"refund_id": "re_1", "amount": 10}, {"id": "m1"}]
    records = engine.records(run)
    assert [r["type"] for r in records] == [
        "run.started", "op.called", "approval.requested", "approval.decided", "op.called", "run.finished"]
    group = {"id": "all:1", "size": 2}
    assert [r.get("group") for r in records] == [
        None, {**group, "index": 0}, {**group, "index": 0}, {**group, "index": 0}, {**group, "index": 1}, None]


@pytest.mark.django_db
def test_a_hold_nobody_could_decide_says_why_and_one_someone_could_says_nothing(settings):
    nobody = approval_selectors.nobody_decides
    make_user("sam", groups=["security"])
    assert nobody("group:security", starter="sam") == "whose only member (sam) started this run"
    assert nobody("group:security", starter="sam", starter_does="is the one applying") == \
        "whose only member (sam) is the one applying"
    assert nobody("sam", starter="sam") == "who started this run"
    assert nobody("group:security", starter="sam", self_approval=True) is None  # the policy let him decide it
    assert nobody("group:audit", starter="sam") == "which has no active member"
    settings.SANOMA_ALLOW_SELF_APPROVAL = True
    assert nobody("group:security", starter="sam") is None
    settings.SANOMA_ALLOW_SELF_APPROVAL = False
    make_user("rita", groups=["security"])
    assert nobody("group:security", starter="sam") is None  # rita can
    assert nobody("group:security", starter="ops") is None
    retired = make_user("old", groups=["audit"])
    retired.is_active = False
    retired.save()
    assert nobody("group:audit", starter="sam") == "which has no active member"
    assert nobody("old", starter="sam") == "who is not an active user"
