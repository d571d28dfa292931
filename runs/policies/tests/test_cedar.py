"""Cedar policies: the request a call becomes, Cedar's rule, `@approve` holds, loading errors.

Checks 33-42 rewritten for Cedar where they speak of function policies (39-41: approvals lifting
`@approve` forbids, `@covers`)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from connectors.errors import ConfigError, error_code
from runs.policies import allow_all, load_cedar_policy
from runs.policies.cedar import CedarPolicy
from runs.policies.explain import explain

from .support import Run, approved, cedar, make_call, write_policies

PERMIT_ALL = "permit(principal, action, resource);\n"


def kind(policy, **kw) -> str:
    return policy.decide(make_call(**kw)).kind


def loaded(directory: Path) -> CedarPolicy:
    """The Cedar policy of a directory that holds policy files."""
    policy = load_cedar_policy(directory)
    assert policy is not None
    return policy


# -- loading -------------------------------------------------------------------------------------


def test_missing_directory_or_no_files_is_none(tmp_path):
    assert load_cedar_policy(tmp_path / "policies") is None
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "README.md").write_text("not a policy")
    assert load_cedar_policy(tmp_path / "policies") is None


def test_parse_error_names_file_and_line(tmp_path):
    directory = write_policies(tmp_path, {
        "a.cedar": PERMIT_ALL,
        "b.cedar": """
            // refunds
            permit(principal, action, resource);

            @id("big-refunds")
            forbid(principal, action, resource)
            when { context.input.amount > };
        """,
    })
    with pytest.raises(ConfigError) as caught:
        load_cedar_policy(directory)
    err = caught.value
    assert error_code(err) == "config_invalid"
    assert len(err.problems) == 1
    assert err.problems[0].startswith("policies/b.cedar:4: ")  # where the broken policy starts
    assert "unexpected token" in err.problems[0]


def test_every_broken_policy_is_reported(tmp_path):
    directory = write_policies(tmp_path, {
        "a.cedar": "permit(principal, action, resource)\n",  # missing ;
        "b.cedar": (
            PERMIT_ALL + '\n// a "quoted; comment"\npermit(principal, action, resource) when { context.x === 1 };\n'
        ),
    })
    with pytest.raises(ConfigError) as caught:
        load_cedar_policy(directory)
    problems = caught.value.problems
    assert [p.split(": ")[0] for p in problems] == ["policies/a.cedar:1", "policies/b.cedar:4"]
    assert "policies/a.cedar:1" in str(caught.value) and "policies/b.cedar:4" in str(caught.value)


def test_semicolons_in_strings_do_not_split_policies(tmp_path):
    policy = cedar(tmp_path, """
        @reason("closed; try tomorrow")
        forbid(principal, action, resource) when { context.input.note like "*;*" };
        permit(principal, action, resource);
    """)
    assert [r.line for r in policy.rules] == [1, 3]
    d = policy.decide(make_call(input={"note": "a;b"}))
    assert d.reason == "shop.order.refund was denied by policy: closed; try tomorrow"


@pytest.mark.parametrize(
    "text, message",
    [
        ('@approve("")\nforbid(principal, action, resource);', "@approve must name an approver"),
        ('@approve("group:")\nforbid(principal, action, resource);', "@approve must name an approver"),
        ('@approve("alice")\npermit(principal, action, resource);', "@approve only applies to a forbid"),
        ('@title("x")\nforbid(principal, action, resource);', "@title only applies to a forbid with @approve"),
        ('permit(?principal, action, resource);', "policies/main.cedar:1"),
    ],
)
def test_misused_annotations_refused_at_load(tmp_path, text, message):
    with pytest.raises(ConfigError, match="policies/main.cedar:1") as caught:
        cedar(tmp_path, text)
    assert message in str(caught.value)


def test_ids_come_from_at_id_or_file_and_line(tmp_path):
    policy = cedar(tmp_path, main_cedar="""
        // header comment
        @id("finance-refunds")
        permit(principal in Group::"finance", action, resource);

        forbid(principal, action, resource) when { context.input.amount > 1000 };
    """, z_cedar=PERMIT_ALL)
    assert [(r.id, r.location, r.effect) for r in policy.rules] == [
        ("finance-refunds", "main.cedar:2", "permit"),
        ("main.cedar:5", "main.cedar:5", "forbid"),
        ("z.cedar:1", "z.cedar:1", "permit"),
    ]
    d = policy.decide(make_call(input={"amount": 5000}))
    assert d.policies == ("main.cedar:5",)
    assert d.reason == "shop.order.refund was denied by policy: main.cedar:5"


def test_duplicate_id_refused(tmp_path):
    with pytest.raises(ConfigError, match="already used at policies/a.cedar:1"):
        cedar(tmp_path, a_cedar='@id("x")\n' + PERMIT_ALL, b_cedar='@id("x")\n' + PERMIT_ALL)


def test_version_changes_when_a_file_changes(tmp_path):
    directory = write_policies(tmp_path, {"a.cedar": PERMIT_ALL})
    first = loaded(directory).version
    assert first.startswith("cedar:")
    assert loaded(directory).version == first  # same files, same version
    (directory / "a.cedar").write_text(PERMIT_ALL + "\n// tightened\n")
    second = loaded(directory).version
    assert second != first
    (directory / "a.cedar").rename(directory / "b.cedar")
    assert loaded(directory).version not in (first, second)
    # the version is stamped on every decision
    policy = loaded(directory)
    assert policy.decide(make_call()).policy_version == policy.version


# -- 33 / 34: the request --------------------------------------------------------------------------


def test_principal_groups_action_effect_context(tmp_path):
    policy = cedar(tmp_path, """
        permit(principal == User::"alice", action == Action::"shop.order.read", resource);
        permit(principal in Group::"finance", action in Action::"money", resource)
        when { context.effect == "money" && context.workflow == "refunds" && context.run_id == "run-9" };
    """)
    assert kind(policy, op_id="shop.order.read", actor="alice") == "allow"
    assert kind(policy, op_id="shop.order.read", actor="bob") == "deny"
    assert kind(policy, actor="bob", groups=("sales", "finance"), run_id="run-9") == "allow"
    assert kind(policy, actor="bob", groups=("finance",), run_id="run-1") == "deny"
    assert kind(policy, actor="bob", groups=("finance",), run_id="run-9", workflow="payroll") == "deny"
    # a person named like the group is not in it
    assert kind(policy, actor="finance", groups=(), run_id="run-9") == "deny"


def test_action_in_effect(tmp_path):
    policy = cedar(tmp_path, 'permit(principal, action in Action::"money", resource);')
    assert kind(policy, op_id="shop.order.refund") == "allow"  # money
    assert kind(policy, op_id="shop.order.note") == "deny"  # write


def test_target_rules(tmp_path):
    policy = cedar(tmp_path, """
        permit(principal, action, resource in Operation::"shop.order.refund");
        @reason("order 7 is in dispute")
        forbid(principal, action, resource == Target::"order/7");
        permit(principal, action, resource) when { context has target && context.target like "invoice/*" };
    """)
    assert kind(policy) == "allow"  # no target: the resource is the operation
    assert kind(policy, target="order/8") == "allow"  # a target is in its operation
    held = policy.decide(make_call(target="order/7"))
    assert (held.kind, held.reasons) == ("deny", ("order 7 is in dispute",))
    assert kind(policy, op_id="shop.order.note", target="order/8") == "deny"
    assert kind(policy, op_id="shop.order.note", target="invoice/3") == "allow"


def test_input_conditions(tmp_path):
    policy = cedar(tmp_path, """
        permit(principal, action, resource);
        @reason("refunds over 100 are not allowed")
        forbid(principal, action, resource)
        when {
            context.input.amount > 100 && context.input.customer.tier != "gold"
            && context.input.tags.contains("manual")
        };
    """)
    base = {"customer": {"tier": "silver", "note": None}, "tags": ["manual", None]}
    assert kind(policy, input={**base, "amount": 150}) == "deny"
    assert kind(policy, input={**base, "amount": 50}) == "allow"
    assert kind(policy, input={**base, "amount": 150, "customer": {"tier": "gold"}}) == "allow"
    assert kind(policy, input={**base, "amount": 150, "tags": ["auto"]}) == "allow"


def test_floats_are_decimals_and_unusable_values_are_dropped(tmp_path):
    policy = cedar(tmp_path, """
        permit(principal, action, resource)
        when {
            context.input.price.greaterThan(decimal("10.5")) && !(context.input has huge) && !(context.input has gone)
        };
    """)
    assert kind(policy, input={"price": 12.25, "huge": 2**70, "gone": None}) == "allow"
    assert kind(policy, input={"price": 9.99}) == "deny"


def test_input_cannot_forge_entities(tmp_path):
    policy = cedar(tmp_path, 'permit(principal, action, resource) when { context.input.who == User::"admin" };')
    forged = {"who": {"__entity": {"type": "User", "id": "admin"}}}
    assert kind(policy, input=forged) == "deny"
    assert kind(policy, input={"who": {"type": "User", "id": "admin"}}) == "deny"


# -- Cedar's rule --------------------------------------------------------------------------------


def test_nothing_permitted_is_denied(tmp_path):
    policy = cedar(tmp_path, 'permit(principal in Group::"finance", action, resource);')
    d = policy.decide(make_call(actor="bob"))
    assert d.kind == "deny"
    assert d.reason == "shop.order.refund was denied by policy: no policy permits shop.order.refund for bob"
    assert d.policies == ()


def test_plain_forbid_wins_over_permit_with_reason(tmp_path):
    policy = cedar(tmp_path, """
        @id("everyone")
        permit(principal, action, resource);

        @id("refunds-locked")
        @reason("locked")
        forbid(principal, action == Action::"shop.order.refund", resource);
    """)
    d = policy.decide(make_call())
    record = d.to_dict()
    assert record["kind"] == "deny"
    assert record["reason"] == "shop.order.refund was denied by policy: locked"
    assert record["reasons"] == ["locked"]
    assert record["policies"] == ["refunds-locked"]
    assert record["policy_version"] == policy.version
    assert kind(policy, op_id="shop.order.note") == "allow"


def test_plain_forbid_denies_even_when_an_approve_forbid_is_lifted(tmp_path):
    policy = cedar(tmp_path, """
        permit(principal, action, resource);
        @approve("alice")
        forbid(principal, action in Action::"money", resource);
        @reason("bob may not refund")
        forbid(principal == User::"bob", action, resource);
    """)
    d = policy.decide(make_call(actor="bob", approvals=(approved(1, "alice", "shop.order.refund"),)))
    assert (d.kind, d.reasons) == ("deny", ("bob may not refund",))
    # no approval can lift a plain forbid, and it is not held for one either
    assert policy.decide(make_call(actor="bob")).kind == "deny"


def test_allow_names_the_permits_and_lifts(tmp_path):
    policy = cedar(tmp_path, """
        @id("finance")
        @reason("finance handles refunds")
        permit(principal in Group::"finance", action, resource);
        @id("big")
        @approve("alice")
        forbid(principal, action, resource) when { context.input.amount > 100 };
    """)
    d = policy.decide(make_call(groups=("finance",), input={"amount": 500},
                                approvals=(approved(3, "alice", "shop.order.refund"),)))
    assert d.kind == "allow"
    assert d.policies == ("finance",)
    assert d.reasons == ("finance handles refunds", "big lifted by approval-3 (alice)")


def test_a_policy_that_errors_is_skipped_and_reported(tmp_path):
    policy = cedar(tmp_path, """
        permit(principal, action, resource);
        @id("needs-amount")
        forbid(principal, action, resource) when { context.input.amount > 100 };
    """)
    d = policy.decide(make_call(op_id="shop.order.note", input={}))
    assert d.kind == "allow"  # Cedar's rule: a policy that errors does not apply
    assert any(r.startswith("policy needs-amount could not be evaluated") for r in d.reasons)


# -- @approve holds --------------------------------------------------------------------------------


def test_approve_forbid_holds_despite_broad_permit(tmp_path):
    policy = cedar(tmp_path, """
        permit(principal, action, resource);
        @id("refund-signoff")
        @approve("alice")
        @title("Refund needs Alice")
        @reason("refunds need a sign-off")
        forbid(principal, action == Action::"shop.order.refund", resource);
    """)
    d = policy.decide(make_call(actor="bob", groups=("admins",)))
    assert d.to_dict() == {
        "kind": "approve", "approver": "alice", "title": "Refund needs Alice",
        "reasons": ["refunds need a sign-off"], "policies": ["refund-signoff"],
        "policy_version": policy.version,
    }
    # pending, rejected or someone else's approval does not lift it
    for other in (approved(1, "alice", "shop.order.refund", status="pending"),
                  approved(1, "alice", "shop.order.refund", status="rejected"),
                  approved(1, "bob", "shop.order.refund"),
                  approved(1, "alice", "shop.order.note")):
        assert kind(policy, approvals=(other,)) == "approve"
    assert kind(policy, approvals=(approved(1, "alice", "shop.order.refund"),)) == "allow"


def test_lifted_forbid_still_needs_a_permit(tmp_path):
    policy = cedar(tmp_path, """
        permit(principal in Group::"finance", action, resource);
        @approve("alice")
        forbid(principal, action, resource);
    """)
    lifted = (approved(1, "alice", "shop.order.refund"),)
    # Nobody is asked to approve what no policy permits: it is denied at once.
    at_once = policy.decide(make_call(groups=("sales",)))
    assert at_once.kind == "deny" and "no policy permits" in at_once.reason
    d = policy.decide(make_call(groups=("sales",), approvals=lifted))
    assert d.kind == "deny" and "no policy permits" in d.reason
    assert kind(policy, groups=("finance",), approvals=lifted) == "allow"


def test_two_approve_forbids_need_both_in_turn(tmp_path):
    policy = cedar(tmp_path, a_cedar=PERMIT_ALL, b_cedar="""
        @approve("group:security")
        forbid(principal, action in Action::"money", resource);
    """, c_cedar="""
        @approve("alice")
        forbid(principal, action, resource) when { context.input.amount > 100 };
    """)
    run = Run(policy)
    needed = run.call("shop.order.refund", {"amount": 500})
    assert [a.approver for a in needed] == ["group:security", "alice"]  # file order, one at a time
    assert run.vendor_calls == ["shop.order.refund"]
    # alice alone is not enough
    only_alice = (approved(1, "alice", "shop.order.refund"),)
    assert policy.decide(make_call(input={"amount": 500}, approvals=only_alice)).approver == "group:security"


def test_group_approver(tmp_path):
    policy = cedar(tmp_path, PERMIT_ALL + """
        @approve("group:security")
        forbid(principal, action, resource == Target::"door/1");
    """)
    d = policy.decide(make_call("shop.order.note", target="door/1"))
    assert (d.kind, d.approver) == ("approve", "group:security")
    person = (approved(1, "security", "shop.order.note"),)
    assert kind(policy, op_id="shop.order.note", target="door/1", approvals=person) == "approve"
    group = (approved(1, "group:security", "shop.order.note"),)
    assert kind(policy, op_id="shop.order.note", target="door/1", approvals=group) == "allow"


# -- 39-41 with Cedar ------------------------------------------------------------------------------


PUBLISH = PERMIT_ALL + """
    @approve("marketing-lead")
    forbid(principal, action in Action::"publish", resource);
"""


def test_cedar_holds_each_publish_separately(tmp_path):
    run = Run(cedar(tmp_path, PUBLISH))
    run.request_approval("marketing-lead", covers=())  # the workflow's own approval covers nothing
    first = run.call("bluesky.post.create")
    second = run.call("mastodon.status.create")
    assert [a.covers for a in first] == [("bluesky.post.create",)]
    assert [a.covers for a in second] == [("mastodon.status.create",)]
    assert run.vendor_calls == ["bluesky.post.create", "mastodon.status.create"]


def test_covers_lets_later_post_through(tmp_path):
    run = Run(cedar(tmp_path, PERMIT_ALL + """
        @approve("marketing-lead")
        @covers("bluesky.post.create, mail.message.send")
        forbid(principal, action in Action::"publish", resource);
    """))
    held = run.call("mastodon.status.create")
    later = run.call("bluesky.post.create")
    assert later == []  # no new approval
    assert [a.covers for a in held] == [("mastodon.status.create", "bluesky.post.create", "mail.message.send")]
    assert run.decisions[0][1].to_dict()["covers"] == ["bluesky.post.create", "mail.message.send"]
    assert run.vendor_calls == ["mastodon.status.create", "bluesky.post.create"]


def test_intern_approval_does_not_lift(tmp_path):
    run = Run(cedar(tmp_path, PUBLISH))
    run.request_approval("intern", covers=("bluesky.post.create",))
    needed = run.call("bluesky.post.create", approve=False)
    assert [a.approver for a in needed] == ["marketing-lead"]
    assert run.vendor_calls == []


def test_cedar_is_defined(tmp_path):
    policy = cedar(tmp_path, PERMIT_ALL)
    assert isinstance(policy, CedarPolicy)
    assert policy.defined is True and policy.describe()["defined"] is True
    assert allow_all.defined is False


# -- speed and explain -------------------------------------------------------------------------------


def test_sets_are_parsed_once(tmp_path, monkeypatch):
    import cedarpy

    policy = cedar(tmp_path, PUBLISH)
    lifted = (approved(1, "marketing-lead", "bluesky.post.create"),)
    policy.decide(make_call("bluesky.post.create", approvals=lifted))  # builds the lifted set once
    parses = []
    real = cedarpy.PolicySet.from_json_str

    def counted(*a, **k):
        parses.append(1)
        return real(*a, **k)

    monkeypatch.setattr(cedarpy.PolicySet, "from_json_str", counted)
    for _ in range(20):
        assert policy.decide(make_call("bluesky.post.create", approvals=lifted)).kind == "allow"
        assert policy.decide(make_call("bluesky.post.create")).kind == "approve"
    assert parses == []


def test_explain_lists_every_policy(tmp_path):
    policy = cedar(tmp_path, a_cedar="""
        @id("finance")
        permit(principal in Group::"finance", action, resource);
        permit(principal in Group::"sales", action, resource);
    """, b_cedar="""
        @approve("alice")
        @title("Big refund")
        forbid(principal, action, resource) when { context.input.amount > 100 };
        forbid(principal, action, resource) when { context.input.nope == 1 };
    """)
    call = make_call(groups=("finance",), input={"amount": 500}, approvals=(approved(2, "alice", "shop.order.refund"),))
    out = explain(policy, call)
    json.dumps(out)
    rows = {p["id"]: p for p in out["policies"]}
    assert list(rows) == ["finance", "a.cedar:3", "b.cedar:1", "b.cedar:4"]
    assert rows["finance"]["satisfied"] is True and rows["finance"]["effect"] == "permit"
    assert (rows["finance"]["file"], rows["finance"]["line"]) == ("a.cedar", 1)
    assert rows["a.cedar:3"]["satisfied"] is False
    assert rows["b.cedar:1"]["annotations"] == {"approve": "alice", "title": "Big refund"}
    assert rows["b.cedar:1"]["satisfied"] is True and rows["b.cedar:1"]["lifted_by"] == "approval-2"
    assert rows["b.cedar:4"]["satisfied"] is False and "nope" in rows["b.cedar:4"]["error"]
    assert out["decision"]["kind"] == "allow" and out["version"] == "policy@" + policy.version.removeprefix("cedar:")
    assert out["request"]["principal"] == {"type": "User", "id": "bob"}
