"""Policies decide every operation call, through the engine.

Each check runs a real workflow on the fakes, with a Python policy (`define_policy`) and, where the
check speaks of the company's rules, with Cedar files. The policies' own unit tests are in
`runs/policies/tests/`; these show what a user sees: the run's status and error, the ledger, the
approvals, and whether the vendor was called.
"""
from __future__ import annotations

from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest
from pydantic import BaseModel

from connectors import define_connector, op, with_setup
from connectors.errors import DriverError, InvalidInput, SanomaError, error_code
from connectors.fakes import define_fake
from runs import selectors
from runs.approvals import services as approvals
from runs.authoring import define_workflow
from runs.models import Approval, Run
from runs.policies import allow, allow_all, approve, approved_for, define_policy, deny, load_cedar_policy
from runs.testing import make_user
from runs.tests.fixtures import GET, PUBLISH, REFUND, SEND, acme

# -- helpers ------------------------------------------------------------------------------------


def cedar(tmp_path: Path, text: str, name: str = "main.cedar"):
    """The Cedar policy of `tmp_path/policies/`, with `text` as one of its files."""
    directory = tmp_path / "policies"
    directory.mkdir(exist_ok=True)
    (directory / name).write_text(dedent(text).lstrip("\n"), encoding="utf-8")
    return load_cedar_policy(directory)


PERMIT_ALL = """
@id("permit-all")
permit(principal, action, resource);
"""


def ops_called(engine) -> list[str]:
    """The operations that reached the vendor, in order."""
    return [c["op"] for c in engine.fake.calls]


def op_records(engine, run: Run) -> list[dict]:
    return engine.records(run, "op.called")


def pending(run: Run) -> list[Approval]:
    return list(Approval.objects.filter(run=run, status="pending").order_by("seq"))


def approve_pending(engine, run: Run, by: str, note: str = "") -> dict:
    """`by` approves the run's first pending approval; a worker then advances the run."""
    state = approvals.decide(run_id=run.id, decision="approve", by=by, note=note, timeout=0)
    engine.drain()
    run.refresh_from_db()
    return state


def refund_flow(amount: int = 10, order_id: str = "1"):
    def body(ctx, input):
        refund = ctx.acme.order.refund({"order_id": order_id, "amount": amount})
        return {"refund": refund.refund_id}

    return define_workflow(name="refund-one", uses=[REFUND], run=body)


def get_then_refund_then_mail(ctx, input):
    order = ctx.acme.order.get({"order_id": "1"})
    refund = ctx.acme.order.refund({"order_id": order.order_id, "amount": 10})
    note = ctx.acme.mail.send({"to": "customer", "text": f"refunded {refund.amount}"})
    return {"refund": refund.refund_id, "mail": note.id}


shop_flow = define_workflow(name="shop-flow", uses=[GET, REFUND, SEND], run=get_then_refund_then_mail)


# -- 23: a denied call stops what follows -------------------------------------------------------


def deny_refunds(call):
    return deny("refunds are frozen") if call.op["id"] == "acme.order.refund" else allow()


def test_denied_first_member_of_all_stops_the_second_from_reaching_the_vendor(engine_for):
    def body(ctx, input):
        return ctx.all([
            lambda: ctx.acme.order.refund({"order_id": "1", "amount": 10}),
            lambda: ctx.acme.mail.send({"to": "customer", "text": "refunded"}),
        ])

    flow = define_workflow(name="fan-out", uses=[REFUND, SEND, "all"], run=body)
    engine = engine_for(flow, policy=define_policy(deny_refunds, version="v1"))
    run = engine.run("fan-out")

    assert run.status == "failed"
    assert run.error["code"] == "policy_denied"
    assert ops_called(engine) == []  # neither the denied refund nor the mail after it
    assert engine.fake.state["mail"] == []
    assert [r["op"] for r in op_records(engine, run)] == ["acme.order.refund"]
    assert engine.kinds(run) == ["run.started", "op.called", "run.failed"]


def test_denied_first_call_stops_the_sequential_second_call(engine_for):
    def body(ctx, input):
        ctx.acme.order.refund({"order_id": "1", "amount": 10})
        ctx.acme.mail.send({"to": "customer", "text": "refunded"})

    flow = define_workflow(name="one-then-other", uses=[REFUND, SEND], run=body)
    engine = engine_for(flow, policy=define_policy(deny_refunds, version="v1"))
    run = engine.run("one-then-other")

    assert run.status == "failed" and run.error["code"] == "policy_denied"
    assert ops_called(engine) == []


def test_with_cedar_a_forbidden_first_member_stops_the_second(engine_for, tmp_path):
    policy = cedar(tmp_path, PERMIT_ALL + """
        @id("no-refunds")
        @reason("refunds are frozen")
        forbid(principal, action == Action::"acme.order.refund", resource);
    """)

    def body(ctx, input):
        return ctx.all([
            lambda: ctx.acme.order.refund({"order_id": "1", "amount": 10}),
            lambda: ctx.acme.mail.send({"to": "customer", "text": "refunded"}),
        ])

    flow = define_workflow(name="fan-out", uses=[REFUND, SEND, "all"], run=body)
    engine = engine_for(flow, policy=policy)
    run = engine.run("fan-out")
    assert run.status == "failed" and run.error["code"] == "policy_denied"
    assert ops_called(engine) == []
    (record,) = op_records(engine, run)
    assert record["group"] == {"id": "all:1", "index": 0, "size": 2}


def test_a_caught_denial_lets_the_workflow_go_on_to_other_calls(engine_for):
    def body(ctx, input):
        try:
            ctx.acme.order.refund({"order_id": "1", "amount": 10})
        except Exception as err:
            code = error_code(err)
        note = ctx.acme.mail.send({"to": "customer", "text": "we cannot refund"})
        return {"code": code, "mail": note.id}

    flow = define_workflow(name="caught", uses=[REFUND, SEND], run=body)
    engine = engine_for(flow, policy=define_policy(deny_refunds, version="v1"))
    run = engine.run("caught")
    assert run.status == "finished", run.error
    assert run.result == {"code": "policy_denied", "mail": "m1"}
    assert ops_called(engine) == ["acme.mail.send"]


# -- 33: the policy sees plain data -------------------------------------------------------------


def test_python_policy_receives_plain_data(engine_for):
    seen: list[Any] = []

    def policy(call):
        seen.append(call)
        return allow()

    def body(ctx, input):
        ctx.acme.order.get({"order_id": "1"})
        ctx.acme.mail.send({"to": "customer"})  # `text` left out: the policy sees the parsed default

    flow = define_workflow(name="plain", uses=[GET, SEND], run=body)
    engine = engine_for(flow, policy=define_policy(policy, version="v1"))
    make_user("sam", groups=["staff", "support"], perms=["runs.start_workflow"])
    run = engine.run("plain", by="sam")
    assert run.status == "finished", run.error

    get_call, send_call = seen
    assert get_call.op == {
        "id": "acme.order.get", "vendor": "acme", "resource": "order", "name": "get", "effect": "read"
    }
    assert type(get_call.op) is dict
    assert get_call.effect == "read"
    assert get_call.target == "order/1"
    assert get_call.input == {"order_id": "1"}
    assert get_call.actor == "sam"
    assert set(get_call.groups) == {"staff", "support"}
    assert get_call.run.id == run.id and get_call.run.workflow == "plain"
    assert get_call.run.approvals == ()

    assert send_call.op["id"] == "acme.mail.send" and send_call.effect == "send"
    assert send_call.target is None  # the op declares no target
    assert send_call.input == {"to": "customer", "text": ""}  # parsed, defaults filled in


def test_policy_sees_the_runs_approvals_so_far(engine_for):
    seen: list[Any] = []

    def policy(call):
        seen.append(call.run.approvals)
        return allow()

    def body(ctx, input):
        ctx.approval("Go ahead?", approver="bob", covers=[PUBLISH])
        ctx.acme.post.publish({"text": "hello"})

    flow = define_workflow(name="asks-first", uses=[PUBLISH, "approval"], run=body)
    engine = engine_for(flow, policy=define_policy(policy, version="v1"))
    make_user("bob")
    run = engine.run("asks-first")
    approve_pending(engine, run, "bob")
    assert run.status == "finished", run.error
    (views,) = seen
    (view,) = views
    assert (view.id, view.status, view.approver, tuple(view.covers)) == (
        "approval-1", "approved", "bob", ("acme.post.publish",))


def test_cedar_sees_principal_groups_effect_target_input_and_workflow(engine_for, tmp_path):
    policy = cedar(tmp_path, """
        @id("staff-read")
        permit(principal in Group::"staff", action in Action::"read", resource in Operation::"acme.order.get");

        @id("small-refunds-on-order-1")
        permit(principal in Group::"staff", action == Action::"acme.order.refund", resource == Target::"order/1")
        when { context.input.amount <= 50 && context.workflow == "refund-one" && context.effect == "money"
               && context.target == "order/1" };
    """)
    make_user("sam", groups=["staff"], perms=["runs.start_workflow"])

    engine = engine_for(refund_flow(amount=10), policy=policy)
    ok = engine.run("refund-one", by="sam")
    assert ok.status == "finished", ok.error
    (record,) = op_records(engine, ok)
    assert record["decision"]["kind"] == "allow"
    assert record["decision"]["policies"] == ["small-refunds-on-order-1"]

    too_much = engine_for(refund_flow(amount=60), policy=policy).run("refund-one", by="sam")
    assert too_much.status == "failed" and too_much.error["code"] == "policy_denied"
    assert "no policy permits acme.order.refund for sam" in too_much.error["message"]

    not_staff = engine_for(refund_flow(amount=10), policy=policy).run("refund-one", by="alice")
    assert not_staff.status == "failed" and not_staff.error["code"] == "policy_denied"


# -- 34: target -----------------------------------------------------------------------------------


def test_policy_sees_the_target_string(engine_for):
    def policy(call):
        return deny("order 2 is locked") if call.target == "order/2" else allow()

    engine = engine_for(refund_flow(order_id="1"), policy=define_policy(policy, version="v1"))
    assert engine.run("refund-one").status == "finished"
    engine = engine_for(refund_flow(order_id="2"), policy=define_policy(policy, version="v1"))
    run = engine.run("refund-one")
    assert run.status == "failed"
    assert run.error["message"] == "acme.order.refund was denied by policy: order 2 is locked"


def test_cedar_resource_is_the_target(engine_for, tmp_path):
    policy = cedar(tmp_path, PERMIT_ALL + """
        @id("order-2-locked")
        @reason("order 2 is under investigation")
        forbid(principal, action, resource == Target::"order/2");
    """)
    assert engine_for(refund_flow(order_id="1"), policy=policy).run("refund-one").status == "finished"
    run = engine_for(refund_flow(order_id="2"), policy=policy).run("refund-one")
    assert run.status == "failed"
    assert run.error["message"] == "acme.order.refund was denied by policy: order 2 is under investigation"


class Item(BaseModel):
    n: int


class Done(BaseModel):
    ok: bool = True


def _odd_connector(target):
    vendor = define_connector("odd", {"item": {"touch": op(effect="write", input=Item, output=Done, target=target)}})

    def make_fake(file=None):
        return define_fake(vendor, initial=lambda: {"touched": []},
                           ops={"item": {"touch": lambda state, i, c: state["touched"].append(i.n) or {"ok": True}}},
                           file=file)

    return with_setup(vendor, fake=make_fake)


def test_a_target_that_is_not_a_string_fails_the_run_naming_the_op(engine_for):
    odd = _odd_connector(lambda i: i.n)  # an int, not a string
    touch = odd.op("odd.item.touch")
    policy_calls: list[Any] = []

    def policy(call):
        policy_calls.append(call)
        return allow()

    def body(ctx, input):
        ctx.odd.item.touch({"n": 7})

    flow = define_workflow(name="odd-target", uses=[touch], run=body)
    engine = engine_for(flow, connectors=[acme, odd], policy=define_policy(policy, version="v1"))
    run = engine.run("odd-target")
    assert run.status == "failed"
    assert "odd.item.touch" in run.error["message"]
    assert "target" in run.error["message"]
    assert policy_calls == []  # the policy is never asked
    assert engine.config.fakes["odd"].calls == []


# -- 35: deny recorded --------------------------------------------------------------------------------


def test_python_deny_is_recorded_on_op_called(engine_for):
    policy = define_policy(lambda call: deny("locked", ["why"]), version="v1")
    engine = engine_for(refund_flow(), policy=policy)
    run = engine.run("refund-one")

    assert run.status == "failed"
    assert run.error["code"] == "policy_denied"
    assert run.error["message"] == "acme.order.refund was denied by policy: locked"
    assert run.error["data"] == {"op": "acme.order.refund", "reason": "locked"}
    (record,) = op_records(engine, run)
    decision = record["decision"]
    assert decision["kind"] == "deny"
    assert decision["reason"] == "locked"
    assert decision["reasons"] == ["why"]
    assert decision["policy_version"] == "v1"
    assert record["duration_ms"] == 0
    assert record["error"]["code"] == "policy_denied"
    assert "output" not in record and "attempt" not in record
    assert ops_called(engine) == []


def test_cedar_plain_forbid_denies_with_its_reason_ids_and_version(engine_for, tmp_path):
    policy = cedar(tmp_path, PERMIT_ALL + """
        @id("refunds-frozen")
        @reason("refunds are frozen for the audit")
        forbid(principal, action in Action::"money", resource);
    """)
    engine = engine_for(refund_flow(), policy=policy)
    run = engine.run("refund-one")

    assert run.status == "failed" and run.error["code"] == "policy_denied"
    assert run.error["message"] == "acme.order.refund was denied by policy: refunds are frozen for the audit"
    (record,) = op_records(engine, run)
    assert record["decision"] == {
        "kind": "deny",
        "reason": "acme.order.refund was denied by policy: refunds are frozen for the audit",
        "reasons": ["refunds are frozen for the audit"],
        "policy_version": policy.version,
        "policies": ["refunds-frozen"],
    }
    assert policy.version.startswith("cedar:")
    assert record["duration_ms"] == 0
    assert ops_called(engine) == []


def test_cedar_nothing_permitting_denies_saying_so(engine_for, tmp_path):
    policy = cedar(tmp_path, """
        @id("reads")
        permit(principal, action in Action::"read", resource);
    """)
    engine = engine_for(refund_flow(), policy=policy)
    run = engine.run("refund-one")
    assert run.status == "failed" and run.error["code"] == "policy_denied"
    assert run.error["message"] == (
        "acme.order.refund was denied by policy: no policy permits acme.order.refund for alice"
    )
    (record,) = op_records(engine, run)
    assert record["decision"]["kind"] == "deny" and record["decision"]["policies"] == []
    assert ops_called(engine) == []


def test_allowed_calls_record_the_decision_with_version_and_policy_ids(engine_for, tmp_path):
    policy = cedar(tmp_path, """
        @id("reads-open")
        @reason("reading is always allowed")
        permit(principal, action in Action::"read", resource);

        @id("staff-act")
        permit(principal, action, resource) when { context.workflow == "shop-flow" };
    """)
    engine = engine_for(shop_flow, policy=policy)
    run = engine.run("shop-flow")
    assert run.status == "finished", run.error
    get, refund, mail = op_records(engine, run)
    assert get["decision"] == {"kind": "allow", "reasons": ["reading is always allowed"],
                               "policy_version": policy.version, "policies": ["reads-open", "staff-act"]}
    assert refund["decision"]["policies"] == ["staff-act"]
    assert mail["decision"]["policy_version"] == policy.version
    for record in (get, refund, mail):
        assert record["attempt"] == 1 and "output" in record


# -- 36, 37: a policy that answers badly or throws --------------------------------------------------


@pytest.mark.parametrize("answer", [approve(None), approve(""), "yes", None, {"kind": "allow"}],
                         ids=["approve-no-approver", "approve-blank", "string", "none", "dict"])
def test_an_invalid_answer_fails_the_run_naming_the_op_and_suggesting(engine_for, answer):
    engine = engine_for(refund_flow(), policy=define_policy(lambda call: answer, version="v1"))
    run = engine.run("refund-one")
    assert run.status == "failed"
    message = run.error["message"]
    assert "acme.order.refund" in message
    assert "allow()" in message and "deny(reason)" in message and "approve(approver)" in message
    assert ops_called(engine) == []
    assert Approval.objects.filter(run=run).count() == 0


def test_a_throwing_policy_fails_the_run_keeping_the_code(engine_for):
    def policy(call):
        raise InvalidInput("the amount is unreadable")

    engine = engine_for(refund_flow(), policy=define_policy(policy, version="v1"))
    run = engine.run("refund-one")
    assert run.status == "failed"
    assert run.error["message"] == "The policy failed deciding acme.order.refund: the amount is unreadable"
    assert run.error["code"] == "invalid_input"
    assert ops_called(engine) == []


def test_a_throwing_policy_keeps_a_driver_code_and_a_plain_error_has_none(engine_for):
    def lookup_fails(call):
        raise DriverError("the limits service is down", retryable=True)

    engine = engine_for(refund_flow(), policy=define_policy(lookup_fails, version="v1"))
    run = engine.run("refund-one")
    assert run.error["code"] == "driver_failed"
    assert run.error["message"].startswith("The policy failed deciding acme.order.refund: ")

    def plain(call):
        raise RuntimeError("boom")

    engine = engine_for(refund_flow(), policy=define_policy(plain, version="v1"))
    run = engine.run("refund-one")
    assert run.status == "failed"
    assert run.error["message"] == "The policy failed deciding acme.order.refund: boom"
    assert "code" not in run.error
    assert ops_called(engine) == []


def test_result_rethrows_the_policy_failure_with_its_code(engine_for):
    def policy(call):
        raise InvalidInput("the amount is unreadable")

    engine = engine_for(refund_flow(), policy=define_policy(policy, version="v1"))
    run = engine.run("refund-one")
    with pytest.raises(SanomaError) as caught:
        selectors.result(run_id=run.id, timeout=0)
    assert error_code(caught.value) == "invalid_input"
    assert "The policy failed deciding acme.order.refund" in str(caught.value)


# -- 38-41: approvals covering operations -----------------------------------------------------------


def publish_policy(call):
    """Every publish needs marketing-lead, unless they approved this op already (the default cover)."""
    if call.effect != "publish" or approved_for(call.run.approvals, call.op["id"], "marketing-lead"):
        return allow()
    return approve("marketing-lead")


class Status(BaseModel):
    text: str


class StatusOut(BaseModel):
    id: str


def _social():
    vendor = define_connector("social", {
        "bluesky": {"post": op(effect="publish", input=Status, output=StatusOut)},
        "mastodon": {"toot": op(effect="publish", input=Status, output=StatusOut)},
    })

    def make_fake(file=None):
        def post(state, i, c):
            state["posted"].append(i.text)
            return {"id": f"s{len(state['posted'])}"}

        return define_fake(vendor, initial=lambda: {"posted": []},
                           ops={"bluesky": {"post": post}, "mastodon": {"toot": post}}, file=file)

    return with_setup(vendor, fake=make_fake)


social = _social()
BLUESKY, MASTODON = social.op("social.bluesky.post"), social.op("social.mastodon.toot")


def post_twice(ctx, input):
    ctx.approval("Campaign go-ahead", approver="marketing-lead")  # covers nothing
    ctx.social.bluesky.post({"text": "one"})
    ctx.social.mastodon.toot({"text": "two"})
    return {"ok": True}


PUBLISH_CEDAR = PERMIT_ALL + """
    @id("publish-needs-marketing")
    @approve("marketing-lead")
    forbid(principal, action in Action::"publish", resource);
"""


@pytest.mark.parametrize("kind", ["python", "cedar"])
def test_each_publish_is_held_separately_covering_only_its_own_op(engine_for, tmp_path, kind):
    policy = define_policy(publish_policy, version="v1") if kind == "python" else cedar(tmp_path, PUBLISH_CEDAR)
    flow = define_workflow(name="post-twice", uses=[BLUESKY, MASTODON, "approval"], run=post_twice)
    engine = engine_for(flow, connectors=[acme, social], policy=policy)
    make_user("marketing-lead")
    fake = engine.config.fakes["social"]

    run = engine.run("post-twice")
    approve_pending(engine, run, "marketing-lead")  # the workflow's own approval
    assert run.status == "waiting"
    (first,) = pending(run)
    assert (first.approval_id, first.requested_by, first.covers, first.op) == (
        "approval-2", "policy", ["social.bluesky.post"], "social.bluesky.post")
    assert fake.calls == []

    approve_pending(engine, run, "marketing-lead")
    assert run.status == "waiting"
    (second,) = pending(run)
    assert (second.approval_id, second.covers, second.op) == (
        "approval-3", ["social.mastodon.toot"], "social.mastodon.toot"
    )
    assert [c["op"] for c in fake.calls] == ["social.bluesky.post"]

    approve_pending(engine, run, "marketing-lead")
    assert run.status == "finished", run.error
    assert [c["op"] for c in fake.calls] == ["social.bluesky.post", "social.mastodon.toot"]


def test_a_python_policy_holding_every_refund_lets_each_held_call_through_once_approved(engine_for):
    """The held call goes to the driver once its approval is approved.

    A policy that does not consult `approved_for` (the default cover: hold every refund) holds each
    refund once; it must not keep asking for a new approval after every approval.
    """
    def hold_refunds(call):
        return approve("finance-lead") if call.effect == "money" else allow()

    def body(ctx, input):
        first = ctx.acme.order.refund({"order_id": "1", "amount": 10})
        second = ctx.acme.order.refund({"order_id": "2", "amount": 20})
        return {"refunds": [first.refund_id, second.refund_id]}

    flow = define_workflow(name="two-refunds", uses=[REFUND], run=body)
    engine = engine_for(flow, policy=define_policy(hold_refunds, version="v1"))
    make_user("finance-lead")

    run = engine.run("two-refunds")
    (first,) = pending(run)
    assert first.title == "acme.order.refund needs finance-lead"
    approve_pending(engine, run, "finance-lead")
    assert ops_called(engine) == ["acme.order.refund"], "the approved refund reaches the vendor"
    (second,) = pending(run)
    assert second.op_input == {"order_id": "2", "amount": 20}
    approve_pending(engine, run, "finance-lead")
    assert run.status == "finished", run.error
    assert run.result == {"refunds": ["re_1", "re_2"]}
    assert Approval.objects.filter(run=run).count() == 2


@pytest.mark.parametrize("kind", ["python", "cedar"])
def test_a_hold_covering_another_op_lets_it_through_later_without_a_new_approval(engine_for, tmp_path, kind):
    if kind == "python":
        def policy_fn(call):
            if call.effect != "publish" or approved_for(call.run.approvals, call.op["id"], "marketing-lead"):
                return allow()
            return approve("marketing-lead", covers=[BLUESKY])

        policy = define_policy(policy_fn, version="v1")
    else:
        policy = cedar(tmp_path, PERMIT_ALL + """
            @id("publish-needs-marketing")
            @approve("marketing-lead")
            @covers("social.bluesky.post")
            forbid(principal, action in Action::"publish", resource);
        """)

    def body(ctx, input):
        ctx.social.mastodon.toot({"text": "first"})
        ctx.social.bluesky.post({"text": "later"})
        return {"ok": True}

    flow = define_workflow(name="toot-then-post", uses=[BLUESKY, MASTODON], run=body)
    engine = engine_for(flow, connectors=[acme, social], policy=policy)
    make_user("marketing-lead")

    run = engine.run("toot-then-post")
    (held,) = pending(run)
    assert held.covers == ["social.mastodon.toot", "social.bluesky.post"]  # ids, not objects
    (requested,) = engine.records(run, "approval.requested")
    assert requested["covers"] == ["social.mastodon.toot", "social.bluesky.post"]
    assert requested["op"] == "social.mastodon.toot"

    approve_pending(engine, run, "marketing-lead")
    assert run.status == "finished", run.error
    assert Approval.objects.filter(run=run).count() == 1  # no new approval for the later post
    assert [c["op"] for c in engine.config.fakes["social"].calls] == ["social.mastodon.toot", "social.bluesky.post"]
    toot, post = op_records(engine, run)
    assert post["decision"]["kind"] == "allow"


@pytest.mark.parametrize("kind", ["python", "cedar"])
def test_a_workflow_approval_from_intern_does_not_launder_a_hold_for_marketing_lead(engine_for, tmp_path, kind):
    policy = define_policy(publish_policy, version="v1") if kind == "python" else cedar(tmp_path, PUBLISH_CEDAR)

    def body(ctx, input):
        ctx.approval("Post it?", approver="intern", covers=[PUBLISH])
        return ctx.acme.post.publish({"text": "launch"}).id

    flow = define_workflow(name="launder", uses=[PUBLISH, "approval"], run=body)
    engine = engine_for(flow, policy=policy)
    make_user("intern")
    make_user("marketing-lead")

    run = engine.run("launder")
    approve_pending(engine, run, "intern")
    assert run.status == "waiting"
    (held,) = pending(run)
    assert (held.approval_id, held.approver, held.requested_by) == ("approval-2", "marketing-lead", "policy")
    assert ops_called(engine) == []  # nothing reached the vendor on the intern's word

    approve_pending(engine, run, "marketing-lead")
    assert run.status == "finished", run.error
    assert ops_called(engine) == ["acme.post.publish"]


def test_a_person_named_like_the_group_does_not_lift_a_group_hold(engine_for, tmp_path):
    policy = cedar(tmp_path, PERMIT_ALL + """
        @id("publish-needs-marketing")
        @approve("group:marketing")
        forbid(principal, action in Action::"publish", resource);
    """)

    def body(ctx, input):
        ctx.approval("Post it?", approver="marketing", covers=[PUBLISH])  # the person, not the group
        return ctx.acme.post.publish({"text": "launch"}).id

    flow = define_workflow(name="same-name", uses=[PUBLISH, "approval"], run=body)
    engine = engine_for(flow, policy=policy)
    make_user("marketing")
    make_user("carol", groups=["marketing"])

    run = engine.run("same-name")
    approve_pending(engine, run, "marketing")
    (held,) = pending(run)
    assert held.approver == "group:marketing" and held.title == "acme.post.publish needs group marketing"
    assert ops_called(engine) == []
    approve_pending(engine, run, "carol")
    assert run.status == "finished", run.error


# -- 42 ----------------------------------------------------------------------------------------------


def test_without_a_policy_allow_all_is_used_and_described_as_not_defined(engine_for):
    engine = engine_for(shop_flow)
    assert engine.config.policy is allow_all
    assert engine.config.policy.describe()["defined"] is False
    run = engine.run("shop-flow")
    assert run.status == "finished", run.error
    for record in op_records(engine, run):
        assert record["decision"]["kind"] == "allow"
        assert record["decision"]["policy_version"] == "allow_all"


def test_a_defined_policy_is_described_as_defined(engine_for, tmp_path):
    engine = engine_for(shop_flow, policy=define_policy(lambda call: allow(), version="v9"))
    described = engine.config.policy.describe()
    assert described["defined"] is True and described["version"] == "v9" and described["kind"] == "python"
    engine = engine_for(shop_flow, policy=cedar(tmp_path, PERMIT_ALL))
    assert engine.config.policy.describe()["defined"] is True


# -- Cedar holds ------------------------------------------------------------------------------------


MONEY_HELD = PERMIT_ALL + """
    @id("refunds-need-finance")
    @approve("finance-lead")
    forbid(principal, action in Action::"money", resource);
"""


def test_cedar_money_is_held_for_finance_lead_then_lifted_and_the_call_goes_through(engine_for, tmp_path):
    policy = cedar(tmp_path, MONEY_HELD)
    engine = engine_for(shop_flow, policy=policy)
    make_user("finance-lead")

    run = engine.run("shop-flow")
    assert run.status == "waiting" and run.waiting_for == "approval"
    (held,) = pending(run)
    assert held.title == "acme.order.refund needs finance-lead"
    assert (held.approver, held.requested_by, held.op, held.op_input) == (
        "finance-lead", "policy", "acme.order.refund", {"order_id": "1", "amount": 10})
    assert held.op_seq == 2 and held.covers == ["acme.order.refund"]
    assert ops_called(engine) == ["acme.order.get"]  # the refund waits

    approve_pending(engine, run, "finance-lead", note="fine")
    assert run.status == "finished", run.error
    assert ops_called(engine) == ["acme.order.get", "acme.order.refund", "acme.mail.send"]
    get, refund, mail = op_records(engine, run)
    assert refund["seq"] == 2
    assert refund["decision"]["kind"] == "allow"
    assert refund["decision"]["policy_version"] == policy.version
    assert "permit-all" in refund["decision"]["policies"]
    assert any("refunds-need-finance" in r and "approval-1" in r for r in refund["decision"]["reasons"])
    assert "approval" not in refund  # only a hold that rejected the call is named on it


def test_cedar_a_rejected_hold_fails_the_call_with_approval_rejected(engine_for, tmp_path):
    engine = engine_for(shop_flow, policy=cedar(tmp_path, MONEY_HELD))
    make_user("finance-lead")
    run = engine.run("shop-flow")
    approvals.decide(run_id=run.id, decision="reject", by="finance-lead", note="too much", timeout=0)
    engine.drain()
    run.refresh_from_db()

    assert run.status == "failed"
    assert run.error["code"] == "approval_rejected"
    assert "finance-lead" in run.error["message"] and "too much" in run.error["message"]
    assert ops_called(engine) == ["acme.order.get"]
    refund = op_records(engine, run)[1]
    assert refund["op"] == "acme.order.refund"
    assert refund["approval"] == "approval-1"
    assert refund["error"]["code"] == "approval_rejected"
    assert refund["duration_ms"] == 0


def test_cedar_a_broad_permit_never_skips_the_approval(engine_for, tmp_path):
    policy = cedar(tmp_path, MONEY_HELD + """
        @id("alice-may-do-anything")
        permit(principal == User::"alice", action, resource);
    """)
    engine = engine_for(refund_flow(), policy=policy)
    run = engine.run("refund-one")
    assert run.status == "waiting"
    assert [a.approver for a in pending(run)] == ["finance-lead"]
    assert ops_called(engine) == []


def test_cedar_two_approve_forbids_need_both_approvals_in_turn(engine_for, tmp_path):
    policy = cedar(tmp_path, MONEY_HELD + """
        @id("big-orders-need-security")
        @approve("group:security")
        @title("Refund on a big order")
        forbid(principal, action, resource == Target::"order/2");
    """)
    engine = engine_for(refund_flow(order_id="2"), policy=policy)
    make_user("finance-lead")
    make_user("sec", groups=["security"])

    run = engine.run("refund-one")
    (first,) = pending(run)
    assert (first.approval_id, first.approver, first.title) == (
        "approval-1", "finance-lead", "acme.order.refund needs finance-lead"
    )

    approve_pending(engine, run, "finance-lead")
    assert run.status == "waiting"
    assert ops_called(engine) == []  # one approval of two is not enough
    (second,) = pending(run)
    assert (second.approval_id, second.approver, second.title) == (
        "approval-2", "group:security", "Refund on a big order"
    )
    assert second.op_seq == first.op_seq == 1

    approve_pending(engine, run, "sec")
    assert run.status == "finished", run.error
    assert ops_called(engine) == ["acme.order.refund"]
    (record,) = op_records(engine, run)
    reasons = " ".join(record["decision"]["reasons"])
    assert "approval-1" in reasons and "approval-2" in reasons
    assert engine.kinds(run) == ["run.started", "op.called", "approval.requested", "approval.decided",
                                 "approval.requested", "approval.decided", "run.finished"]


def test_cedar_a_plain_forbid_denies_even_after_the_hold_is_approved(engine_for, tmp_path):
    policy = cedar(tmp_path, MONEY_HELD + """
        @id("order-2-locked")
        @reason("order 2 is under investigation")
        forbid(principal, action, resource == Target::"order/2") when { context.input.amount > 15 };
    """)
    engine = engine_for(refund_flow(order_id="2", amount=20), policy=policy)
    run = engine.run("refund-one")
    # The plain forbid denies outright: nobody is asked to approve a call that cannot go ahead.
    assert run.status == "failed"
    assert run.error["code"] == "policy_denied"
    assert run.error["message"] == "acme.order.refund was denied by policy: order 2 is under investigation"
    assert Approval.objects.filter(run=run).count() == 0


# -- decisions are steps --------------------------------------------------------------------------


class Switchable:
    """A policy whose behaviour the test changes between advances (a new deploy)."""

    def __init__(self) -> None:
        self.mode = "allow"
        self.asked: list[str] = []
        self.inner = define_policy(self._decide, version="v1")
        self.defined = True
        self.version = "v1"

    def _decide(self, call):
        self.asked.append(call.op["id"])
        if self.mode == "deny":
            return deny("changed my mind")
        return allow()

    def decide(self, call):
        return self.inner.decide(call)


def test_a_recorded_decision_is_reused_on_replay_not_decided_again(engine_for):
    policy = Switchable()

    def body(ctx, input):
        order = ctx.acme.order.get({"order_id": "1"})
        ok = ctx.approval("Carry on?", approver="bob")
        return {"order": order.order_id, "by": ok.approved_by}

    flow = define_workflow(name="read-then-ask", uses=[GET, "approval"], run=body)
    engine = engine_for(flow, policy=policy)
    make_user("bob")

    run = engine.run("read-then-ask")
    assert run.status == "waiting"
    assert policy.asked == ["acme.order.get"]

    policy.mode = "deny"  # had it been asked again, the read would now be denied
    approve_pending(engine, run, "bob")
    assert run.status == "finished", run.error
    assert run.result == {"order": "1", "by": "bob"}
    assert policy.asked == ["acme.order.get"]  # the replay reused the recorded decision
    (record,) = op_records(engine, run)
    assert record["decision"]["kind"] == "allow"
    assert ops_called(engine) == ["acme.order.get"]


def test_a_recorded_denial_is_reused_when_a_caught_run_resumes(engine_for):
    policy = Switchable()
    policy.mode = "deny"

    def body(ctx, input):
        got: str | None
        try:
            ctx.acme.order.get({"order_id": "1"})
            got = "read"
        except Exception as err:
            got = error_code(err)
        ok = ctx.approval("Carry on?", approver="bob")
        return {"got": got, "by": ok.approved_by}

    flow = define_workflow(name="denied-then-ask", uses=[GET, "approval"], run=body)
    engine = engine_for(flow, policy=policy)
    make_user("bob")
    run = engine.run("denied-then-ask")
    assert run.status == "waiting"

    policy.mode = "allow"  # the replay must not turn the recorded denial into a vendor call
    approve_pending(engine, run, "bob")
    assert run.status == "finished", run.error
    assert run.result == {"got": "policy_denied", "by": "bob"}
    assert ops_called(engine) == []
    assert policy.asked == ["acme.order.get"]
