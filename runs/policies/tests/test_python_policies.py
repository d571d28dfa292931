"""Function policies: what they see, what they answer, how answers are checked."""
from __future__ import annotations

import json

import pytest

from connectors.errors import SanomaError, error_code, error_to_dict
from runs.policies import (
    ApprovalView,
    Decision,
    allow,
    allow_all,
    approve,
    approved_for,
    define_policy,
    deny,
)
from runs.policies.explain import explain

from .support import Run, approved, make_call, op_of

# -- 33 / 34: what the policy receives --------------------------------------------------------


def test_policy_receives_plain_data():
    seen = []

    def policy(call):
        seen.append(call)
        return allow()

    p = define_policy(policy, version="v1")
    prior = approved(1, "lead", "shop.order.refund")
    call = make_call(
        "shop.order.refund", input={"order": 7, "amount": 120}, actor="alice",
        groups=("finance",), approvals=(prior,),
    )
    p.decide(call)
    (got,) = seen
    assert got.op == {
        "id": "shop.order.refund", "vendor": "shop", "resource": "order", "name": "refund", "effect": "money",
    }
    assert got.effect == "money"
    assert got.target is None  # no target declared
    assert got.input == {"order": 7, "amount": 120}
    assert got.actor == "alice"
    assert got.groups == ("finance",)
    assert (got.run.id, got.run.workflow, got.run.approvals) == ("run-1", "refunds", (prior,))
    # plain data: JSON all the way down
    json.dumps({"op": got.op, "input": got.input})


def test_policy_sees_target_string():
    p = define_policy(lambda call: deny("order 7 is frozen") if call.target == "order/7" else allow(), version="v1")
    assert p.decide(make_call(target="order/7")).kind == "deny"
    assert p.decide(make_call(target="order/8")).kind == "allow"


# -- 35: deny ---------------------------------------------------------------------------------


def test_deny_records_reason_reasons_and_version():
    p = define_policy(lambda call: deny("locked", ["why"]), version="v1")
    decision = p.decide(make_call())
    assert decision.kind == "deny"
    record = decision.to_dict()
    assert record["kind"] == "deny"
    assert record["reason"] == "locked"
    assert record["reasons"] == ["why"]
    assert record["policy_version"] == "v1"
    assert "approver" not in record and "covers" not in record
    json.dumps(record)


def test_version_is_stamped_on_every_decision():
    answers = iter([allow(["ok"]), deny("no"), approve("lead")])
    p = define_policy(lambda call: next(answers), version="2024-06")
    kinds = [p.decide(make_call()) for _ in range(3)]
    assert [d.kind for d in kinds] == ["allow", "deny", "approve"]
    assert {d.policy_version for d in kinds} == {"2024-06"}
    assert kinds[0].reasons == ("ok",)


@pytest.mark.parametrize("version", ["", "   ", None, 3])
def test_define_policy_needs_a_version(version):
    with pytest.raises(ValueError, match="version"):
        define_policy(lambda call: allow(), version=version)


# -- 36: invalid answers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        approve(None),
        approve(""),
        approve({"group": ""}),
        approve("group:"),
        None,
        "allow",
        {"kind": "allow"},
        Decision(kind="maybe"),
        deny(""),
    ],
)
def test_invalid_answer_names_op_and_suggests(answer):
    p = define_policy(lambda call: answer, version="v1")
    with pytest.raises(SanomaError) as caught:
        p.decide(make_call("bluesky.post.create"))
    err = caught.value
    assert error_code(err) == "invalid_input"
    assert "bluesky.post.create" in str(err)
    for hint in ("allow()", "deny(reason)", "approve(approver)"):
        assert hint in str(err)


# -- 37: a policy that throws ----------------------------------------------------------------


class Locked(Exception):
    code = "permission_denied"


def test_throwing_policy_keeps_code():
    def policy(call):
        raise Locked("the shop is closed")

    with pytest.raises(SanomaError) as caught:
        define_policy(policy, version="v1").decide(make_call("shop.order.refund"))
    err = caught.value
    assert str(err) == "The policy failed deciding shop.order.refund: the shop is closed"
    assert error_code(err) == "permission_denied"
    assert error_to_dict(err)["code"] == "permission_denied"


def test_throwing_policy_without_code():
    def policy(call):
        return call.input["missing"]

    with pytest.raises(SanomaError) as caught:
        define_policy(policy, version="v1").decide(make_call())
    assert str(caught.value).startswith("The policy failed deciding shop.order.refund: ")
    assert error_code(caught.value) is None


def test_async_policy_is_decided():
    async def policy(call):
        return approve({"group": "finance"})

    decision = define_policy(policy, version="v1").decide(make_call())
    assert (decision.kind, decision.approver) == ("approve", "group:finance")


def test_async_policy_that_waits_fails_naming_op():
    import asyncio

    async def policy(call):
        await asyncio.sleep(0)  # suspends: a policy must not wait on anything
        return allow()

    with pytest.raises(SanomaError, match="The policy failed deciding shop.order.refund: .*without waiting"):
        define_policy(policy, version="v1").decide(make_call())


# -- approve ------------------------------------------------------------------------------------


def test_approve_normalises_group_and_covers():
    class Op:
        id = "bluesky.post.create"

    d = approve({"group": "marketing"}, "Post it?", covers=[Op(), "mastodon.status.create", op_of("mail.message.send")])
    assert d.approver == "group:marketing"
    assert d.title == "Post it?"
    assert d.covers == ("bluesky.post.create", "mastodon.status.create", "mail.message.send")
    assert approve("lead", {"title": "T", "covers": [Op()]}).covers == ("bluesky.post.create",)


def test_approve_with_bad_covers_fails_the_decision():
    p = define_policy(lambda call: approve("lead", covers=[42]), version="v1")
    with pytest.raises(SanomaError, match="covers") as caught:
        p.decide(make_call())
    assert error_code(caught.value) == "invalid_input"


# -- 38: approved_for -------------------------------------------------------------------------


OP = "shop.order.refund"


def test_approved_for_true():
    assert approved_for([approved(1, "lead", OP)], OP, "lead")


@pytest.mark.parametrize(
    "approval, approver",
    [
        (approved(1, "lead", OP, status="pending"), "lead"),
        (approved(1, "lead", OP, status="rejected"), "lead"),
        (approved(1, "lead", OP, status="withdrawn"), "lead"),
        (approved(1, "lead", "shop.order.note"), "lead"),
        (approved(1, "lead"), "lead"),  # covers nothing
        (approved(1, "intern", OP), "lead"),
        (approved(1, "group:marketing", OP), "marketing"),
        (approved(1, "marketing", OP), {"group": "marketing"}),
    ],
)
def test_approved_for_false(approval, approver):
    assert not approved_for([approval], OP, approver)


def test_group_approvals_match_groups():
    approvals = [approved(1, "group:marketing", OP)]
    assert approved_for(approvals, OP, {"group": "marketing"})
    assert approved_for(approvals, OP, "group:marketing")
    assert not approved_for([], OP, "lead")


# -- 39-41: the default-cover policy -----------------------------------------------------------


def publish_policy(call):
    """Every publish needs marketing-lead, unless they approved this op already."""
    if call.effect != "publish" or approved_for(call.run.approvals, call.op["id"], "marketing-lead"):
        return allow()
    return approve("marketing-lead")


def test_a_python_policy_holds_each_publish_separately():
    run = Run(define_policy(publish_policy, version="v1"))
    # the workflow's own approval covers nothing
    run.request_approval("marketing-lead", covers=())
    first = run.call("bluesky.post.create")
    second = run.call("mastodon.status.create")
    assert [a.covers for a in first] == [("bluesky.post.create",)]
    assert [a.covers for a in second] == [("mastodon.status.create",)]
    assert run.vendor_calls == ["bluesky.post.create", "mastodon.status.create"]


def test_hold_covers_later_post():
    def policy(call):
        if call.effect != "publish" or approved_for(call.run.approvals, call.op["id"], "marketing-lead"):
            return allow()
        return approve("marketing-lead", covers=[op_of("bluesky.post.create")])

    run = Run(define_policy(policy, version="v1"))
    held = run.call("mastodon.status.create")
    later = run.call("bluesky.post.create")
    assert [a.covers for a in held] == [("mastodon.status.create", "bluesky.post.create")]
    assert later == []  # no new approval
    assert run.vendor_calls == ["mastodon.status.create", "bluesky.post.create"]
    hold = run.decisions[0][1].to_dict()
    assert hold["covers"] == ["bluesky.post.create"]


def test_intern_approval_does_not_launder():
    run = Run(define_policy(publish_policy, version="v1"))
    run.request_approval("intern", covers=("bluesky.post.create",))
    needed = run.call("bluesky.post.create", approve=False)
    assert [a.approver for a in needed] == ["marketing-lead"]
    assert run.vendor_calls == []  # nothing reached the vendor before marketing-lead approved
    run.approvals[-1] = ApprovalView("approval-2", "approved", "marketing-lead", ("bluesky.post.create",))
    assert run.call("bluesky.post.create") == []
    assert run.vendor_calls == ["bluesky.post.create"]


# -- 42 ----------------------------------------------------------------------------------------


def test_allow_all_is_not_defined_and_allows():
    assert allow_all.defined is False
    assert allow_all.describe()["defined"] is False
    assert define_policy(lambda call: allow(), version="v1").defined is True
    d = allow_all.decide(make_call("shop.order.refund"))
    assert d.kind == "allow"


def test_explain_python_policy():
    p = define_policy(lambda call: deny("locked"), version="v7")
    out = explain(p, make_call())
    assert out["kind"] == "python" and out["version"] == "policy@v7" and out["defined"] is True
    assert out["decision"]["reason"] == "locked"

    def broken(call):
        raise RuntimeError("boom")

    out = explain(define_policy(broken, version="v8"), make_call())
    assert out["decision"] is None
    assert "boom" in out["error"]["message"]


def test_decision_round_trips_through_ledger_json():
    d = approve({"group": "finance"}, "Refund?", covers=["shop.order.note"])
    d = define_policy(lambda call: d, version="v1").decide(make_call())
    record = json.loads(json.dumps(d.to_dict()))
    assert record == {
        "kind": "approve", "reasons": [], "policy_version": "v1", "policies": list(d.policies),
        "approver": "group:finance", "title": "Refund?", "covers": ["shop.order.note"],
    }
    assert Decision.from_dict(record) == d
