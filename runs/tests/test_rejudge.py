"""Held calls judged again by a new policy (`runs.approvals.rejudge`): released, reassigned or
refused, each once, and the run goes on as the new policy says.

Each test parks a real run on a policy hold under one policy, then brings in a config with another
policy (same workflows, same version: the deploy's migration is not what is tested here), judges
the held calls again with it, and lets the in-process worker on the new config advance the run.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest
from django.db import connection

from connectors.errors import SanomaError
from runs import services
from runs.approvals import services as approvals
from runs.approvals.rejudge import judge_held, rejudge_held
from runs.approvals.rules import POLICY_ACTOR
from runs.approvals.selectors import decided_said, inbox
from runs.authoring import define_workflow
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig, SanomaConfig
from runs.ledger import verify
from runs.models import Approval, LedgerRecord, Run
from runs.policies import allow, approve, define_policy, deny, load_cedar_policy
from runs.policies.versions import policy_version_of
from runs.testing import drain, make_user, resolve_on_fakes
from runs.tests.fixtures import REFUND, SEND, acme

VERSION = "rejudge-test"  # both configs run the same workflows: one version, so one worker takes the run


def refund_then_mail(ctx: Any, input: Any) -> dict:
    refund = ctx.acme.order.refund({"order_id": "7", "amount": 40})
    ctx.acme.mail.send({"to": "customer", "text": "refunded"})
    return {"refund": refund.refund_id}


FLOW = define_workflow(name="refund-mail", uses=[REFUND, SEND], run=refund_then_mail)


def holds_for(approver: str):
    return lambda call: approve(approver) if call.effect == "money" else allow()


def configured(policy: Any) -> ResolvedConfig:
    config = resolve_on_fakes(SanomaConfig(connectors=[acme], workflows=[FLOW], policy=policy), app_version=VERSION)
    set_config(config)
    return config


def refunds(config: ResolvedConfig) -> list[dict]:
    return config.fakes["acme"].state["refunds"]


def park() -> Run:
    """A run of `refund-mail` started by alice, parked on a hold for finance-lead (policy v1)."""
    make_user("alice", perms=["runs.start_workflow"])
    for name in ("finance-lead", "cfo"):
        make_user(name)
    old = configured(define_policy(holds_for("finance-lead"), version="v1"))
    run = services.start(workflow="refund-mail", input={}, started_by="alice", config=old)
    drain(old)
    run.refresh_from_db()
    assert run.status == "waiting" and run.waiting_for == "approval"
    assert refunds(old) == []
    return run


@pytest.fixture
def held(db) -> Iterator[Run]:
    yield park()
    set_config(None)


def records(run: Run, kind: str) -> list[dict]:
    return [r.body for r in LedgerRecord.objects.filter(run_id=run.id, kind=kind).order_by("id")]


def test_a_call_the_new_policy_allows_is_released_and_goes_ahead_once(held):
    new = configured(define_policy(lambda call: allow(), version="v2"))
    assert [a.approval_id for a in inbox(principal="finance-lead")] == ["approval-1"]

    found = rejudge_held(config=new)

    assert found.released == [{"approval": "approval-1", "run": held.id, "operation": "acme.order.refund",
                                "from": "finance-lead", "to": None, "reason": "the policy now allows it"}]
    assert (found.reassigned, found.refused, found.failed) == ([], [], [])
    approval = Approval.objects.get(run=held)
    assert (approval.status, approval.decided_by, approval.decided_with) == ("released", POLICY_ACTOR, "v2")
    (released,) = records(held, "approval.released")
    assert (released["from_policy"], released["to_policy"]) == ("policy@v1", "policy@v2")
    assert list(inbox(principal="finance-lead")) == []  # no longer asked of anyone
    assert decided_said(approval) == "released by the policy (the policy now allows it)"
    held.refresh_from_db()
    assert held.status == "queued"  # woken: the call goes ahead

    drain(new)
    held.refresh_from_db()
    assert held.status == "finished", held.error
    assert [r["order_id"] for r in refunds(new)] == ["7"]  # exactly once
    assert verify(held.id).breaks == []

    again = rejudge_held(config=new)  # never twice
    assert again.changed == 0 and len(records(held, "approval.released")) == 1
    drain(new)
    assert len(refunds(new)) == 1


def test_a_call_the_new_policy_denies_is_refused_with_its_reason(held):
    new = configured(define_policy(
        lambda call: deny("refunds are frozen") if call.effect == "money" else allow(), version="v2"))

    found = rejudge_held(config=new)

    assert [(r["approval"], r["reason"]) for r in found.refused] == [("approval-1", "refunds are frozen")]
    approval = Approval.objects.get(run=held)
    assert (approval.status, approval.decided_by, approval.note) == ("withdrawn", POLICY_ACTOR, "refunds are frozen")
    assert decided_said(approval) == "withdrawn by the policy (refunds are frozen)"
    (withdrawn,) = records(held, "approval.withdrawn")
    assert withdrawn["denied"] is True and withdrawn["reason"] == "refunds are frozen"
    assert withdrawn["to_policy"] == "policy@v2"

    drain(new)
    held.refresh_from_db()
    assert held.status == "failed"
    assert held.error["code"] == "policy_denied"
    assert "refunds are frozen" in held.error["message"]
    assert refunds(new) == [] and new.fakes["acme"].state["mail"] == []
    (called,) = records(held, "op.called")
    assert called["decision"]["kind"] == "deny" and called["decision"]["policy_version"] == "v2"
    assert rejudge_held(config=new).changed == 0


def test_a_call_held_for_another_approver_is_reassigned_in_place(held):
    new = configured(define_policy(holds_for("cfo"), version="v2"))

    found = rejudge_held(config=new)

    assert [(r["from"], r["to"]) for r in found.reassigned] == [("finance-lead", "cfo")]
    approval = Approval.objects.get(run=held)
    assert (approval.status, approval.approver, approval.title) == ("pending", "cfo", "acme.order.refund needs cfo")
    (reassigned,) = records(held, "approval.reassigned")
    assert (reassigned["from"], reassigned["to"], reassigned["to_policy"]) == ("finance-lead", "cfo", "policy@v2")
    assert list(inbox(principal="finance-lead")) == []
    assert [a.approval_id for a in inbox(principal="cfo")] == ["approval-1"]
    with pytest.raises(SanomaError) as refused:  # the old approver no longer decides it
        approvals.decide(run_id=held.id, decision="approve", by="finance-lead", timeout=0)
    assert refused.value.code == "not_approver"
    assert rejudge_held(config=new).changed == 0  # held for cfo already: nothing to do

    approvals.decide(run_id=held.id, decision="approve", by="cfo", timeout=0)
    drain(new)
    held.refresh_from_db()
    assert held.status == "finished", held.error
    assert len(refunds(new)) == 1
    assert Approval.objects.filter(run=held).count() == 1  # the run did not ask again


def test_the_same_approver_and_workflow_approvals_are_left_alone(db, held):
    new = configured(define_policy(holds_for("finance-lead"), version="v2"))
    assert rejudge_held(config=new).changed == 0
    assert records(held, "approval.reassigned") == [] and Approval.objects.get(run=held).status == "pending"

    def asks(ctx: Any, input: Any) -> dict:
        ctx.approval("May we?", approver="finance-lead")
        return {}

    own = define_workflow(name="asks", uses=["approval"], run=asks)
    config = resolve_on_fakes(SanomaConfig(connectors=[acme], workflows=[own],
                                           policy=define_policy(lambda call: allow(), version="v3")),
                              app_version=VERSION)
    set_config(config)
    run = services.start(workflow="asks", input={}, started_by="alice", config=config)
    drain(config)
    found = rejudge_held(config=config)
    assert [r["run"] for r in found.released] == [held.id]  # the workflow's own approval is not the policy's
    assert Approval.objects.get(run=run).status == "pending"


def test_a_dry_run_says_what_it_would_do_and_changes_nothing(held):
    new = configured(define_policy(lambda call: allow(), version="v2"))
    before = list(LedgerRecord.objects.filter(run_id=held.id).values_list("id", flat=True))

    found = rejudge_held(config=new, dry_run=True)

    assert [r["approval"] for r in found.released] == ["approval-1"]
    assert Approval.objects.get(run=held).status == "pending"
    assert list(LedgerRecord.objects.filter(run_id=held.id).values_list("id", flat=True)) == before
    held.refresh_from_db()
    assert held.status == "waiting"


def test_an_ended_run_is_not_judged_again(held):
    approvals.withdraw(run_id=held.id, by="alice")  # the run fails with approval_withdrawn
    drain(configured(define_policy(holds_for("finance-lead"), version="v1")))
    held.refresh_from_db()
    assert held.status == "failed"
    new = configured(define_policy(lambda call: allow(), version="v2"))
    assert rejudge_held(config=new).changed == 0


def test_a_policy_that_fails_on_the_call_leaves_it_held_and_says_why(held):
    def broken(call: Any) -> Any:
        raise RuntimeError("no rates loaded")

    found = rejudge_held(config=configured(define_policy(broken, version="v2")))
    assert found.changed == 0
    (failed,) = found.failed
    assert failed["approval"] == "approval-1" and "no rates loaded" in failed["reason"]
    assert Approval.objects.get(run=held).status == "pending"


def test_judge_held_reads_the_call_as_the_advance_does(held):
    """The new policy sees the run's starter, its workflow and the call's input and target."""
    seen: list[Any] = []

    def look(call: Any) -> Any:
        seen.append(call)
        return allow()

    verdict = judge_held(approval=Approval.objects.get(run=held), config=configured(define_policy(look, version="v2")))
    assert verdict.outcome == "released"
    (call,) = seen
    assert (call.actor, call.run.workflow, call.run.id) == ("alice", "refund-mail", held.id)
    assert call.op_id == "acme.order.refund" and call.input == {"order_id": "7", "amount": 40}
    assert call.target == "order/7"
    assert [(a.id, a.status) for a in call.run.approvals] == [("approval-1", "pending")]


def test_cedar_files_judge_the_held_call_and_name_their_version(held, tmp_path: Path):
    directory = tmp_path / "policies"
    directory.mkdir()
    (directory / "main.cedar").write_text(dedent("""
        @id("permit-all")
        permit(principal, action, resource);

        @id("refunds-by-cfo")
        @approve("cfo")
        forbid(principal, action in Action::"money", resource);
    """).lstrip(), encoding="utf-8")
    policy = load_cedar_policy(directory)
    version = policy_version_of(policy)
    assert version.startswith("policy@") and len(version) == len("policy@") + 16

    found = rejudge_held(config=configured(policy))
    assert [(r["from"], r["to"]) for r in found.reassigned] == [("finance-lead", "cfo")]
    (reassigned,) = records(held, "approval.reassigned")
    assert reassigned["to_policy"] == version


def test_policy_versions_name_the_policy_or_none():
    from runs.policies import allow_all
    assert policy_version_of(None) == "" and policy_version_of(allow_all) == ""
    assert policy_version_of(define_policy(lambda call: allow(), version="2024-06")) == "policy@2024-06"


@pytest.mark.django_db(transaction=True)
def test_two_rejudges_at_once_release_the_call_once():
    """Two processes judging at once (two deploys' workers starting together): each approval is
    locked with its run, so one releases it and the other finds it no longer pending."""
    held = park()
    new = configured(define_policy(lambda call: allow(), version="v2"))
    found: list[Any] = []
    start = threading.Barrier(2)

    def judge() -> None:
        try:
            start.wait()
            found.append(rejudge_held(config=new))
        finally:
            connection.close()

    threads = [threading.Thread(target=judge) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(len(f.released) for f in found) == [0, 1]
    assert len(records(held, "approval.released")) == 1
    drain(new)
    held.refresh_from_db()
    assert held.status == "finished" and len(refunds(new)) == 1
    assert verify(held.id).breaks == []
    set_config(None)


def test_a_deploy_judges_only_the_held_calls_of_the_versions_it_names(held):
    """A run pinned to older code goes on with that code's worker and its policy: a deploy passes
    its live versions, and the held calls of other versions are left as they are."""
    new = configured(define_policy(lambda call: allow(), version="v2"))
    assert rejudge_held(config=new, versions={"refund-mail@older"}).changed == 0
    assert Approval.objects.get(run=held).status == "pending"
    found = rejudge_held(config=new, versions={held.app_version})
    assert [r["run"] for r in found.released] == [held.id]


def test_a_held_child_start_is_judged_like_a_call_and_starts_the_child_once(db):
    """`ctx.start_run` is put to the policy as `sanoma.run.start`, its target the child's id."""
    from runs.tests.test_child_runs import lookup, parent

    make_user("alice", perms=["runs.start_workflow"])
    make_user("bob")
    seen: list[Any] = []

    def releases(call: Any) -> Any:
        seen.append(call)
        return allow()

    def start_with(policy: Any) -> ResolvedConfig:
        config = resolve_on_fakes(SanomaConfig(connectors=[acme], workflows=[parent, lookup], policy=policy),
                                  app_version=VERSION)
        set_config(config)
        return config

    old = start_with(define_policy(lambda call: approve("bob") if call.op_id == "sanoma.run.start" else allow(),
                                   version="h1"))
    run = services.start(workflow="parent", input={"order_id": "1"}, started_by="alice", config=old)
    drain(old)
    run.refresh_from_db()
    assert run.waiting_for == "approval" and not Run.objects.filter(parent=run).exists()

    new = start_with(define_policy(releases, version="h2"))
    found = rejudge_held(config=new)
    assert [r["operation"] for r in found.released] == ["sanoma.run.start"]
    held_start = Approval.objects.get(run=run).op_input
    assert isinstance(held_start, dict) and seen[0].target == held_start["run_id"]
    drain(new)
    run.refresh_from_db()
    assert run.status == "finished", run.error
    assert Run.objects.filter(parent=run).count() == 1
    set_config(None)
