"""Direct calls through the service: made, held then made, denied, rejected, failed, idempotent by
key, and every bad input refused naming what is wrong with nothing written."""
from __future__ import annotations

from typing import Any

import pytest
from django_q.models import OrmQ

from connectors import DriverError
from connectors.errors import InvalidInput, SanomaError
from runs import selectors
from runs.approvals import services as approvals
from runs.direct_calls import CallFailed, CallRefused, call
from runs.models import Approval, LedgerRecord, Run
from runs.policies import allow, approve, approved_for, define_policy, deny
from runs.testing import make_user


def hold_money(call: Any) -> Any:
    if call.effect == "money" and not approved_for(call.run.approvals, call.op["id"], "finance-lead"):
        return approve("finance-lead", "Refund needs finance")
    return allow()


def no_mail_from_direct_calls(call: Any) -> Any:
    if call.effect == "send" and call.run.workflow == "call":
        return deny("mail goes out from workflows only")
    return allow()


def written() -> tuple[int, int, int, int]:
    return Run.objects.count(), LedgerRecord.objects.count(), Approval.objects.count(), OrmQ.objects.count()


@pytest.fixture
def engine(engine_for):
    return engine_for(policy=define_policy(hold_money, version="v1"))


def test_an_allowed_call_is_made_and_recorded_in_the_ledger(engine):
    answer = call(op="acme.order.get", input={"order_id": "1"}, by="alice")
    assert answer.outcome == "made"
    assert answer.output == {"order_id": "1", "total": 100, "handle": "h-1"}
    assert [c["op"] for c in engine.fake.calls] == ["acme.order.get"]
    run = Run.objects.get(pk=answer.run_id)
    assert (run.workflow, run.status, run.started_by) == ("call", "finished", "alice")
    called = engine.records(run, "op.called")
    assert len(called) == 1
    body = called[0]
    assert body["op"] == "acme.order.get"
    assert body["input"] == {"order_id": "1"}
    assert body["decision"]["kind"] == "allow"
    assert body["output"]["handle"] != "h-1"  # opaque fields are masked in the ledger, as for any call
    assert answer.message == f"acme.order.get was called (run {run.id})"


def test_a_retried_call_with_the_same_key_is_one_vendor_call(engine):
    first = call(op="acme.mail.send", input={"to": "bob", "text": "hi"}, by="alice", key="mail-bob-1")
    again = call(op="acme.mail.send", input={"to": "bob", "text": "hi"}, by="alice", key="mail-bob-1")
    assert first.run_id == again.run_id == "call-mail-bob-1"
    assert (first.repeated, again.repeated) == (False, True)
    assert first.output == again.output == {"id": "m1"}
    assert len(engine.fake.calls) == 1
    assert engine.fake.state["mail"] == [{"to": "bob", "text": "hi"}]
    assert Run.objects.filter(workflow="call").count() == 1


def test_a_key_used_for_another_call_is_refused_naming_what_differs(engine):
    call(op="acme.mail.send", input={"to": "bob", "text": "hi"}, by="alice", key="k1")
    before = written()
    with pytest.raises(InvalidInput) as refused:
        call(op="acme.mail.send", input={"to": "eve", "text": "hi"}, by="alice", key="k1")
    assert refused.value.data["differs"] == ["input"]
    assert refused.value.data["issues"][0]["path"] == ["key"]
    assert "The key k1 was used for another call" in refused.value.message
    with pytest.raises(InvalidInput) as other_op:
        call(op="acme.order.get", input={"order_id": "1"}, by="alice", key="k1")
    assert other_op.value.data["differs"] == ["op"]
    assert written() == before and len(engine.fake.calls) == 1


def test_a_held_call_becomes_a_run_that_waits_for_its_approver_then_calls(engine):
    make_user("finance-lead")
    answer = call(op="acme.order.refund", input={"order_id": "2", "amount": 700}, by="alice", key="refund-2")
    assert answer.outcome == "held"
    assert answer.approvals == [{"approval_id": "approval-1", "title": "Refund needs finance",
                                 "approver": "finance-lead"}]
    assert answer.to_dict()["approver"] == "finance-lead"
    assert "held for approval by finance-lead (approval-1)" in answer.message
    assert answer.run_id in answer.message
    assert engine.fake.calls == []
    run = Run.objects.get(pk=answer.run_id)
    assert (run.workflow, run.status, run.waiting_for) == ("call", "waiting", "approval")
    # Asked again before the decision: still held, nothing sent.
    assert call(op="acme.order.refund", input={"order_id": "2", "amount": 700}, by="alice",
                key="refund-2").outcome == "held"
    approvals.decide(run_id=run.id, decision="approve", by="finance-lead", timeout=0)
    engine.drain()
    done = call(op="acme.order.refund", input={"order_id": "2", "amount": 700}, by="alice", key="refund-2")
    assert (done.outcome, done.repeated, done.output) == ("made", True, {"refund_id": "re_1", "amount": 700})
    assert len(engine.fake.state["refunds"]) == 1
    assert engine.fake.state["refunds"][0]["key"] == f"{run.id}:1"
    # The held call's op.called is numbered before its approval's records, as in any run.
    assert engine.kinds(run) == ["run.started", "op.called", "approval.requested", "approval.decided",
                                 "run.finished"]


def test_a_rejected_call_is_refused_with_the_approvers_note(engine):
    make_user("finance-lead")
    answer = call(op="acme.order.refund", input={"order_id": "2", "amount": 700}, by="alice", key="r")
    approvals.decide(run_id=answer.run_id, decision="reject", by="finance-lead", note="not this one", timeout=0)
    engine.drain()
    with pytest.raises(CallRefused) as refused:
        call(op="acme.order.refund", input={"order_id": "2", "amount": 700}, by="alice", key="r")
    assert refused.value.code == "approval_rejected"
    assert refused.value.data["run_id"] == answer.run_id
    assert engine.fake.calls == []


def test_a_denied_call_is_refused_with_the_reason_and_audited(engine_for):
    engine = engine_for(policy=define_policy(no_mail_from_direct_calls, version="v1"))
    with pytest.raises(CallRefused) as refused:
        call(op="acme.mail.send", input={"to": "bob"}, by="alice")
    err = refused.value
    assert err.code == "policy_denied"
    assert err.data["reason"] == "mail goes out from workflows only"
    assert "mail goes out from workflows only" in err.message and err.data["run_id"] in err.message
    assert engine.fake.calls == []
    run = Run.objects.get(pk=err.data["run_id"])
    assert run.status == "failed"
    (called,) = engine.records(run, "op.called")
    assert called["decision"]["kind"] == "deny"
    assert called["error"]["code"] == "policy_denied"


def test_a_vendor_failure_is_the_vendors_error_with_the_run(engine):
    with pytest.raises(CallFailed) as failed:
        call(op="acme.order.get", input={"order_id": "404"}, by="alice")
    assert failed.value.code == "driver_failed"
    assert failed.value.vendor_code == "not_found"  # type: ignore[attr-defined]
    assert "no order 404" in failed.value.message
    assert Run.objects.get(pk=failed.value.data["run_id"]).status == "failed"


def test_a_retryable_vendor_failure_is_tried_again_like_any_call(engine):
    engine.fake.fail_next("acme.order.get", DriverError("busy", retryable=True, status=503))
    answer = call(op="acme.order.get", input={"order_id": "1"}, by="alice")
    assert answer.outcome == "made"
    assert [r["attempt"] for r in engine.records(Run.objects.get(pk=answer.run_id), "op.attempt_failed")] \
        == [1]


@pytest.mark.parametrize("op, payload, path, words", [
    ("acme.order.refund", {"order_id": "1", "amount": 0}, ["input", "amount"], "amount"),
    ("acme.order.refund", {"order_id": "1"}, ["input", "amount"], "amount"),
    ("acme.order.get", {"order_id": 5}, ["input", "order_id"], "acme.order.get"),
    ("acme.order.get", ["1"], ["input"], "JSON object"),
    ("acme.order.nope", {}, ["op"], "is not an operation of this config"),
    ("", {}, ["op"], "Name the operation"),
    ("sanoma.apps.list", {}, ["op"], "the runtime's own"),
])
def test_a_bad_call_is_refused_naming_what_is_wrong_and_writes_nothing(engine, op, payload, path, words):
    before = written()
    with pytest.raises(InvalidInput) as refused:
        call(op=op, input=payload, by="alice")
    assert words in refused.value.message
    if path is not None:
        assert refused.value.data["issues"][0]["path"] == path
    assert written() == before and engine.fake.calls == []


@pytest.mark.parametrize("key", ["", "has space", "x" * 196, 7])
def test_a_bad_key_is_refused_naming_the_key(engine, key):
    before = written()
    with pytest.raises(InvalidInput) as refused:
        call(op="acme.order.get", input={"order_id": "1"}, by="alice", key=key)
    assert refused.value.data["issues"][0]["path"] == ["key"]
    assert "a key is 1-195 characters" in refused.value.message
    assert written() == before


def test_who_may_not_start_the_call_workflow_may_not_call(engine):
    make_user("vera")
    before = written()
    with pytest.raises(SanomaError) as refused:
        call(op="acme.order.get", input={"order_id": "1"}, by="vera")
    assert refused.value.code == "permission_denied"
    assert "vera may not make direct calls" in refused.value.message
    with pytest.raises(SanomaError) as nobody:
        call(op="acme.order.get", input={"order_id": "1"}, by="ghost")
    assert nobody.value.code == "permission_denied"
    with pytest.raises(InvalidInput) as blank:
        call(op="acme.order.get", input={"order_id": "1"}, by=" ")
    assert blank.value.data["issues"][0]["path"] == ["as"]
    assert written() == before and engine.fake.calls == []


def test_the_call_workflow_is_built_in_and_uses_the_callable_operations(engine):
    definition = engine.config.workflows["call"]
    assert definition.builtin
    assert "acme.order.refund" in definition.ops
    assert not any(op.startswith("sanoma.") for op in definition.ops)
    assert selectors.result(run_id=call(op="acme.order.get", input={"order_id": "2"}, by="alice").run_id,
                            timeout=0)["total"] == 5000


def test_a_call_whose_retry_is_due_later_is_under_way_and_its_run_named(engine):
    engine.fake.rate_limit("acme.order.get", retry_after=120)
    answer = call(op="acme.order.get", input={"order_id": "1"}, by="alice", key="later")
    assert (answer.outcome, answer.waiting_for) == ("under_way", "retry")
    assert answer.message == "acme.order.get is under way (retry): follow run call-later"
    assert answer.to_dict()["waiting_for"] == "retry" and "output" not in answer.to_dict()
    run = Run.objects.get(pk="call-later")
    assert (run.status, run.waiting_for) == ("waiting", "retry")
    assert len(engine.records(run, "op.attempt_failed")) == 1
