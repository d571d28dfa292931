"""Separation of duties: the starter of a run cannot decide its approvals.

Not through `decide` (refused before anything is sent) and not through a decision message the run
applies (recorded as `approval.refused`), even as a member of the approver group or as the named
approver. Two opt-ins let it through: a policy for one hold (`@self_approval("allowed")` on a Cedar
`@approve` forbid, `approve(..., self_approval=True)` in Python), and `SANOMA_ALLOW_SELF_APPROVAL`
for a whole site. A workflow's own approval cannot opt itself in.
"""
from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest
from django.test import override_settings
from pydantic import BaseModel

from connectors.errors import SanomaError, error_code
from runs import selectors
from runs.approvals import services as approvals
from runs.approvals.permissions import principal_of
from runs.authoring import define_workflow
from runs.config.resolution import ConfigError
from runs.models import Approval, DecisionMessage, LedgerRecord
from runs.policies import allow, approve, approved_for, define_policy, load_cedar_policy
from runs.testing import make_user
from runs.tests.fixtures import REFUND

REFUSED = "alice started this run and cannot approve it"


class AskInput(BaseModel):
    approver: str = "group:finance"
    details: dict | None = None


def ask_then_refund(ctx, input):
    ok = ctx.approval("Refund order 1", approver=input.approver, details=input.details)
    ctx.acme.order.refund({"order_id": "1", "amount": 10})
    return {"by": ok.approved_by}


asking = define_workflow(name="asking", input=AskInput, uses=[REFUND, "approval"], run=ask_then_refund)


def refund(ctx, input):
    return {"refund": ctx.acme.order.refund({"order_id": "1", "amount": 10}).refund_id}


refunding = define_workflow(name="refunding", uses=[REFUND], run=refund)


def finance_holds(self_approval: bool):
    def policy(call):
        if call.effect != "money" or approved_for(call.run.approvals, call.op_id, {"group": "finance"}):
            return allow()
        return approve({"group": "finance"}, "Refund needs finance", self_approval=self_approval)

    return define_policy(policy, version=f"finance-{self_approval}")


def cedar(tmp_path: Path, text: str):
    directory = tmp_path / "policies"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "main.cedar").write_text(dedent(text).lstrip("\n"), encoding="utf-8")
    return load_cedar_policy(directory)


CEDAR_HOLD = """
@id("permit-all")
permit(principal, action, resource);

@id("refunds-need-finance")
@approve("group:finance")
{extra}forbid(principal, action in Action::"money", resource);
"""


@pytest.fixture
def people(db):
    class People:
        alice = make_user("alice", groups=["finance"], perms=["runs.start_workflow"])  # starter AND in finance
        carol = make_user("carol", groups=["finance"])
        olga = make_user("olga", perms=["runs.view_any_run", "runs.operate_runs"])

    return People


def nothing_changes(run, approval) -> tuple:
    approval.refresh_from_db()
    return (approval.status, approval.refused, DecisionMessage.objects.count(),
            LedgerRecord.objects.filter(run_id=run.id).count())


def refused_by_decide(run, who="alice") -> SanomaError:
    with pytest.raises(SanomaError) as caught:
        approvals.decide(run_id=run.id, decision="approve", by=who, timeout=0)
    return caught.value


# -- the starter is refused ---------------------------------------------------------------------------------


@pytest.mark.parametrize("approver", ["group:finance", "alice"])
def test_the_starter_cannot_decide_through_decide(engine_for, people, approver):
    engine = engine_for(asking)
    run = engine.run("asking", {"approver": approver})
    approval = Approval.objects.get(run=run)
    before = nothing_changes(run, approval)
    for decision in ("approve", "reject"):
        with pytest.raises(SanomaError) as caught:
            approvals.decide(run_id=run.id, decision=decision, by="alice", timeout=0)
        err = caught.value
        assert error_code(err) == "not_approver"
        assert str(err) == f"{REFUSED} (approval-1)"
        assert err.data["approver"] == approver
    assert nothing_changes(run, approval) == before  # refused before sending: nothing written
    # Before: alice, in group finance (or the named approver), approved her own refund.


def test_a_decision_message_from_the_starter_is_refused_by_the_run(engine_for, people):
    """Past `decide` (a message sent straight to the run), the run refuses it too and records why."""
    engine = engine_for(asking)
    run = engine.run("asking")
    approval = Approval.objects.get(run=run)
    sent = approvals.send_decision(approval=approval, decision="approve", by=principal_of("alice"))
    engine.drain()
    approval.refresh_from_db()
    run.refresh_from_db()
    assert (run.status, approval.status) == ("waiting", "pending")
    assert [(r["by"], r["reason"]) for r in approval.refused] == [("alice", REFUSED)]
    refused = [r for r in selectors.ledger_of(run_id=run.id) if r["type"] == "approval.refused"]
    assert [(r["actor"], r["by"], r["reason"]) for r in refused] == [("alice", "alice", REFUSED)]
    assert DecisionMessage.objects.get(message_id=sent).outcome == "refused"
    with pytest.raises(SanomaError) as caught:
        approvals.wait_for_decision(approval=approval, message_id=sent, timeout=0)
    assert error_code(caught.value) == "not_approver" and str(caught.value) == f"{REFUSED} (approval-1)"

    # Another member of the group decides; the ledger names her.
    approvals.decide(run_id=run.id, decision="approve", by="carol", timeout=0)
    engine.drain()
    run.refresh_from_db()
    assert run.status == "finished" and run.result == {"by": "carol"}
    (decided,) = [r for r in selectors.ledger_of(run_id=run.id) if r["type"] == "approval.decided"]
    assert decided["actor"] == "carol" and decided["by"] == "carol"


def test_a_policy_hold_is_not_the_starters_to_decide(engine_for, people):
    engine = engine_for(refunding, policy=finance_holds(False))
    run = engine.run("refunding")
    assert run.status == "waiting"
    approval = Approval.objects.get(run=run)
    assert approval.details is None
    err = refused_by_decide(run)
    assert error_code(err) == "not_approver" and str(err) == f"{REFUSED} (approval-1)"
    approvals.decide(run_id=run.id, decision="approve", by="carol", timeout=0)
    engine.drain()
    run.refresh_from_db()
    assert run.status == "finished"


def test_a_workflow_cannot_allow_its_own_starter(engine_for, people):
    """Only a policy's permission counts: details a workflow writes on its own approval do not."""
    engine = engine_for(asking)
    run = engine.run("asking", {"details": {"self_approval": "allowed"}})
    assert error_code(refused_by_decide(run)) == "not_approver"
    approval = Approval.objects.get(run=run)
    approvals.send_decision(approval=approval, decision="approve", by=principal_of("alice"))
    engine.drain()
    approval.refresh_from_db()
    assert approval.status == "pending" and approval.refused[-1]["reason"] == REFUSED


# -- the opt-ins -----------------------------------------------------------------------------------------


def test_a_python_policy_may_let_the_starter_decide_its_hold(engine_for, people):
    engine = engine_for(refunding, policy=finance_holds(True))
    run = engine.run("refunding")
    approval = Approval.objects.get(run=run)
    assert approval.details == {"self_approval": "allowed"}  # the approval carries the policy's permission
    state = approvals.decide(run_id=run.id, decision="approve", by="alice", timeout=0)
    assert state["status"] == "pending"  # sent; the run applies it
    engine.drain()
    run.refresh_from_db()
    approval.refresh_from_db()
    assert run.status == "finished" and approval.decided_by == "alice"
    (decided,) = [r for r in selectors.ledger_of(run_id=run.id) if r["type"] == "approval.decided"]
    assert decided["actor"] == "alice"


def test_a_cedar_forbid_may_let_the_starter_decide_its_hold(engine_for, people, tmp_path):
    held = engine_for(refunding, policy=cedar(tmp_path / "plain", CEDAR_HOLD.format(extra="")))
    run = held.run("refunding")
    assert error_code(refused_by_decide(run)) == "not_approver"

    allowed = engine_for(refunding, policy=cedar(tmp_path / "allowed", CEDAR_HOLD.format(
        extra='@self_approval("allowed")\n')))
    run = allowed.run("refunding")
    assert Approval.objects.get(run=run).details == {"self_approval": "allowed"}
    approvals.decide(run_id=run.id, decision="approve", by="alice", timeout=0)
    allowed.drain()
    run.refresh_from_db()
    assert run.status == "finished"


@pytest.mark.parametrize("text, message", [
    ('@self_approval("allowed")\npermit(principal, action, resource);',
     "@self_approval only applies to a forbid with @approve"),
    ('@self_approval("allowed")\nforbid(principal, action, resource);',
     "@self_approval only applies to a forbid with @approve"),
    ('@approve("bob")\n@self_approval("yes")\nforbid(principal, action, resource);',
     '@self_approval can only say "allowed"'),
])
def test_a_misused_self_approval_annotation_is_refused_at_load(tmp_path, text, message):
    with pytest.raises(ConfigError) as caught:
        cedar(tmp_path, text)
    assert message in str(caught.value) and "policies/main.cedar:1" in str(caught.value)


def test_a_python_self_approval_must_be_a_boolean_on_an_approve(engine_for, people):
    from runs.policies.decisions import Decision
    from runs.policies.python_policies import validate_decision

    with pytest.raises(SanomaError, match="self_approval must be True or False"):
        validate_decision("acme.order.refund", approve("bob", self_approval="yes"))  # type: ignore[arg-type]
    with pytest.raises(SanomaError, match="self_approval only applies to approve"):
        validate_decision("acme.order.refund", Decision(kind="allow", self_approval=True))
    decision = approve("bob", self_approval=True)
    assert decision.to_dict()["self_approval"] is True
    assert Decision.from_dict(decision.to_dict()) == decision
    assert "self_approval" not in approve("bob").to_dict()


def test_the_site_setting_lets_starters_decide_everywhere(engine_for, people):
    engine = engine_for(asking)
    with override_settings(SANOMA_ALLOW_SELF_APPROVAL=True):
        by_decide = engine.run("asking")
        approvals.decide(run_id=by_decide.id, decision="approve", by="alice", timeout=0)
        by_message = engine.run("asking")
        approval = Approval.objects.get(run=by_message)
        approvals.send_decision(approval=approval, decision="approve", by=principal_of("alice"))
        engine.drain()
    for run in (by_decide, by_message):
        run.refresh_from_db()
        assert run.status == "finished" and run.result == {"by": "alice"}
    # Still only for who may decide at all: the setting does not make the starter an approver.
    with override_settings(SANOMA_ALLOW_SELF_APPROVAL=True):
        other = engine.run("asking", {"approver": "carol"})
        err = refused_by_decide(other)
    assert error_code(err) == "not_approver" and str(err) == "alice is not the approver; carol is (approval-1)"


def test_the_setting_is_off_by_default():
    from django.conf import settings

    assert settings.SANOMA_ALLOW_SELF_APPROVAL is False


def test_an_operator_still_withdraws_and_a_non_approver_operator_is_refused(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking")
    err = refused_by_decide(run, who="olga")
    assert str(err) == "olga is not in group finance (approval-1)"
    assert approvals.withdraw(run_id=run.id, by="olga")["status"] == "withdrawn"
    (withdrawn,) = [r for r in selectors.ledger_of(run_id=run.id) if r["type"] == "approval.withdrawn"]
    assert withdrawn["actor"] == "olga"
