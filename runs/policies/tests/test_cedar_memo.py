"""A Cedar set's decisions are kept per policy version by what the policies read of a call: a call
that differs only in what no policy reads gets the kept decision; one that differs in what a
policy reads is evaluated again."""
from __future__ import annotations

import json

import cedarpy
import pytest

from runs.policies.cedar.memo import Decisions, Reads, key_of, reads_of
from runs.policies.decisions import Decision
from runs.policies.tests.support import approved, cedar, make_call


def _reads(*texts: str) -> Reads:
    ests = []
    for text in texts:
        parsed = json.loads(cedarpy.policies_to_json_str(text))
        ests += list(parsed["staticPolicies"].values())
    return reads_of(ests)


@pytest.mark.parametrize(("text", "context", "fields"), [
    ('permit(principal, action, resource);', set(), set()),
    ('permit(principal, action, resource) when { context.workflow == "refund" };', {"workflow"}, set()),
    ('forbid(principal, action, resource) when { context.input has n && context.input.n < 0 };', {"input"}, {"n"}),
    ('permit(principal, action, resource) when { context["input"]["amount"] > 5 };', {"input"}, {"amount"}),
    ('permit(principal, action, resource) when { context.input.order.id like "A*" };', {"input"}, {"order"}),
    ('permit(principal, action, resource) unless { context has target };', {"target"}, set()),
])
def test_what_a_set_reads_of_the_context_is_read_from_its_conditions(text, context, fields):
    reads = _reads(text)
    assert reads.context == frozenset(context)
    assert reads.input == frozenset(fields)


def test_the_context_or_the_input_used_whole_makes_all_of_it_count():
    assert _reads('permit(principal, action, resource) when { context == {} };') == Reads(None, None)
    whole_input = _reads('permit(principal, action, resource) when { context.input == {"n": 1} };')
    assert whole_input.context == frozenset({"input"}) and whole_input.input is None
    # One policy reading the input whole counts for the set.
    both = _reads('permit(principal, action, resource) when { context.input.n == 1 };',
                  'permit(principal, action, resource) when { context.input == {} };')
    assert both.input is None


def test_a_key_holds_what_is_read_and_leaves_out_what_is_not():
    reads = Reads(context=frozenset({"input", "workflow"}), input=frozenset({"n"}))
    base = key_of(make_call(input={"n": 1, "note": "a"}), reads)
    assert key_of(make_call(input={"n": 1, "note": "b"}, run_id="run-2"), reads) == base
    assert key_of(make_call(input={"n": 2, "note": "a"}), reads) != base
    assert key_of(make_call(input={"note": "a"}), reads) != base  # missing differs from any value
    assert key_of(make_call(input={"n": True, "note": "a"}), reads) != base  # 1 and true differ in Cedar
    assert key_of(make_call(input={"n": 1}, workflow="other"), reads) != base
    assert key_of(make_call(input={"n": 1}, actor="carol"), reads) != base
    assert key_of(make_call(input={"n": 1}, groups=("finance",)), reads) != base
    assert key_of(make_call(input={"n": 1}, target="order-1"), reads) != base
    assert key_of(make_call(input={"n": 1}, approvals=(approved(1, "alice", "shop.order.refund"),)), reads) != base
    everything = Reads(context=None, input=None)
    assert key_of(make_call(input={"n": 1}, run_id="run-2"), everything) != key_of(make_call(input={"n": 1}),
                                                                                    everything)


def test_records_in_a_key_do_not_depend_on_key_order():
    reads = Reads(context=frozenset({"input"}), input=None)
    assert key_of(make_call(input={"a": {"x": 1, "y": 2}}), reads) == key_of(make_call(input={"a": {"y": 2, "x": 1}}),
                                                                             reads)


def test_a_decision_on_an_input_read_by_a_when_is_not_reused_for_another_value(tmp_path):
    policy = cedar(tmp_path, """
        permit(principal, action, resource);
        @id("no-negative")
        @reason("never negative")
        forbid(principal, action == Action::"shop.order.note", resource) when { context.input.n < 0 };
    """)
    assert policy.decide(make_call("shop.order.note", input={"n": 1})).kind == "allow"
    assert policy.decide(make_call("shop.order.note", input={"n": -1})).kind == "deny"
    assert policy.decide(make_call("shop.order.note", input={"n": 2, "other": "x"})).kind == "allow"
    kept = policy.decisions
    assert (kept.hits, kept.misses) == (0, 3)
    # What no policy reads (another field, the run) leaves the key as it was: the kept decision.
    again = policy.decide(make_call("shop.order.note", input={"n": -1, "other": "z"}, run_id="run-9"))
    assert again.kind == "deny" and again.policies == ("no-negative",)
    assert (kept.hits, kept.misses) == (1, 3)


def test_a_kept_hold_is_lifted_by_an_approval_all_the_same(tmp_path):
    policy = cedar(tmp_path, """
        permit(principal, action, resource);
        @approve("alice")
        forbid(principal, action in Action::"money", resource);
    """)
    assert policy.decide(make_call()).kind == "approve"
    assert policy.decide(make_call()).kind == "approve"  # kept
    lifted = policy.decide(make_call(approvals=(approved(1, "alice", "shop.order.refund"),)))
    assert lifted.kind == "allow"
    assert policy.decide(make_call(approvals=(approved(1, "alice", "shop.order.refund", status="pending"),))
                         ).kind == "approve"


def test_a_new_policy_version_keeps_nothing_of_the_old(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = cedar(tmp_path / "a", "permit(principal, action, resource);")
    assert first.decide(make_call()).kind == "allow"
    second = cedar(tmp_path / "b", "forbid(principal, action, resource);")
    assert second.version != first.version
    assert second.decide(make_call()).kind == "deny"
    assert len(first.decisions) == 1 and len(second.decisions) == 1


def test_the_kept_decisions_are_bounded():
    kept = Decisions(Reads(frozenset(), frozenset()), limit=3)
    for n in range(7):
        kept.keep((n,), Decision(kind="allow"))
        assert len(kept) <= 3
    assert kept.get((6,)) is not None


def test_kept_decisions_agree_with_cedar_on_varied_calls(tmp_path):
    import random

    policy = cedar(tmp_path, """
        permit(principal in Group::"staff", action, resource);
        permit(principal, action in Action::"read", resource);
        @approve("group:finance")
        @title("Money needs finance")
        forbid(principal, action in Action::"money", resource)
        when { context.input has amount && context.input.amount > 100 };
        @reason("not for this workflow")
        forbid(principal, action == Action::"shop.order.note", resource) when { context.workflow == "quiet" };
        @reason("tagged risky")
        forbid(principal, action, resource) when { context.input has tags && context.input.tags.contains("risky") };
        forbid(principal, action, resource == Target::"order/9");
    """)
    rng = random.Random(3)
    work = [
        make_call(rng.choice(["shop.order.refund", "shop.order.note", "shop.order.read"]),
                  input={"amount": rng.choice([5, 150, 99.5, 1000]), "tags": rng.sample(["risky", "ok", "new"], 1),
                         "note": rng.choice(["a", "b"])},
                  actor=rng.choice(["ann", "bob"]), groups=rng.choice([(), ("staff",), ("finance",)]),
                  target=rng.choice([None, "order/9", "order/1"]), workflow=rng.choice(["quiet", "loud"]),
                  run_id=f"run-{i}",
                  approvals=rng.choice([(), (approved(1, "group:finance", "shop.order.refund"),)]))
        for i in range(300)
    ]
    for call in work + work:  # the second time round, every decision is a kept one
        assert policy.decide(call) == policy.evaluate(call)
    assert policy.decisions.hits >= 300
