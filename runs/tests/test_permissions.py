"""Object permissions (django-guardian) enforced by the services every surface calls.

Who may see and decide an approval, who may start a workflow, who may see a run; and the inbox's
query count staying fixed however many approvals are pending.
"""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext
from guardian.shortcuts import assign_perm
from pydantic import BaseModel

from connectors.errors import SanomaError, error_code
from runs import selectors
from runs.approvals import selectors as approval_selectors
from runs.approvals import services as approvals
from runs.approvals.permissions import workflow_entry
from runs.authoring import define_workflow
from runs.models import Approval, DecisionMessage, Run
from runs.testing import make_user
from runs.tests.fixtures import REFUND


class AskInput(BaseModel):
    approver: str = "marketing-lead"


def ask(ctx, input):
    ok = ctx.approval("Refund order 1", approver=input.approver)
    ctx.acme.order.refund({"order_id": "1", "amount": 10})
    return {"by": ok.approved_by}


asking = define_workflow(name="asking", input=AskInput, uses=[REFUND, "approval"], run=ask)
plain = define_workflow(name="plain", run=lambda ctx, input: {"ok": True})


@pytest.fixture
def people(db):
    class People:
        lead = make_user("marketing-lead")
        carol = make_user("carol", groups=["marketing"])
        dave = make_user("dave", groups=["sales"])
        stranger = make_user("stranger")
        operator = make_user("ops", perms=["runs.view_any_run"])
        bob = make_user("bob", perms=["runs.start_workflow"])

    return People


def visible_to(who) -> set[str]:
    return {r.id for r in selectors.list_runs(viewer=who, limit=500).runs}


# -- seeing and deciding an approval ----------------------------------------------------------------------


def test_someone_neither_the_approver_nor_in_its_group_can_neither_see_nor_decide(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking", {"approver": "group:marketing"})
    assert run.status == "waiting"

    for who in ("stranger", "dave", "marketing-lead"):
        assert list(approval_selectors.pending_for(principal=who)) == [], who
        assert selectors.get_run(run_id=run.id, viewer=who) is None, who
        with pytest.raises(SanomaError) as caught:
            approval_selectors.approvals_of(run_id=run.id, viewer=who)
        assert error_code(caught.value) == "run_not_found"
        assert str(caught.value) == f"No run {run.id}, or you may not see it"  # not even whether it exists
        with pytest.raises(SanomaError) as caught:
            selectors.ledger_of(run_id=run.id, viewer=who)
        assert error_code(caught.value) == "run_not_found"
        assert run.id not in visible_to(who)
        with pytest.raises(SanomaError) as caught:
            approvals.decide(run_id=run.id, decision="approve", by=who, timeout=0)
        assert error_code(caught.value) == "run_not_found", who  # not not_approver naming the approver
    assert DecisionMessage.objects.count() == 0
    assert Approval.objects.get(run=run).status == "pending"


def test_a_member_of_the_approver_group_can_see_and_decide(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking", {"approver": "group:marketing"})

    (inbox,) = approval_selectors.pending_for(principal="carol")
    assert (inbox.run_id, inbox.approval_id) == (run.id, "approval-1")
    seen = selectors.get_run(run_id=run.id, viewer="carol")
    assert seen is not None and seen.id == run.id
    assert [a["id"] for a in approval_selectors.approvals_of(run_id=run.id, viewer="carol")] == ["approval-1"]
    assert run.id in visible_to("carol")

    approvals.decide(run_id=run.id, decision="approve", by="carol", timeout=0)
    engine.drain()
    run.refresh_from_db()
    assert run.status == "finished", run.error
    assert list(approval_selectors.pending_for(principal="carol")) == []  # decided: out of the inbox
    assert run.id in visible_to("carol")  # still hers to look at


def test_someone_who_joins_the_group_later_may_decide_and_one_who_leaves_may_not(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking", {"approver": "group:marketing"})
    marketing = Group.objects.get(name="marketing")

    people.carol.groups.remove(marketing)
    assert list(approval_selectors.pending_for(principal="carol")) == []
    with pytest.raises(SanomaError) as caught:
        approvals.decide(run_id=run.id, decision="approve", by="carol", timeout=0)
    assert error_code(caught.value) == "run_not_found"  # out of the group, the run is no longer hers to see

    people.dave.groups.add(marketing)
    assert [a.approval_id for a in approval_selectors.pending_for(principal="dave")] == ["approval-1"]
    approvals.decide(run_id=run.id, decision="approve", by="dave", timeout=0)
    engine.drain()
    run.refresh_from_db()
    assert run.result == {"by": "dave"}


def test_the_named_approver_sees_and_decides_and_nobody_else_does(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking")
    assert [a.approval_id for a in approval_selectors.pending_for(principal="marketing-lead")] == ["approval-1"]
    assert list(approval_selectors.pending_for(principal="carol")) == []  # in marketing, but the approver is a person
    assert selectors.get_run(run_id=run.id, viewer="marketing-lead") is not None
    with pytest.raises(SanomaError) as caught:
        approvals.decide(run_id=run.id, decision="approve", by="carol", timeout=0)
    assert str(caught.value) == f"No run {run.id}, or you may not see it"  # carol may not even see it
    with pytest.raises(SanomaError) as caught:
        approvals.decide(run_id=run.id, decision="approve", by="ops", timeout=0)  # an operator sees it
    assert str(caught.value) == "ops is not the approver; marketing-lead is (approval-1)"


def test_a_deactivated_approver_can_no_longer_decide(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking")
    people.lead.is_active = False
    people.lead.save()
    with pytest.raises(SanomaError) as caught:
        approvals.decide(run_id=run.id, decision="approve", by="marketing-lead", timeout=0)
    assert error_code(caught.value) == "run_not_found"  # an inactive user sees nothing
    assert DecisionMessage.objects.count() == 0


def test_an_approver_with_no_account_gets_one_that_cannot_log_in(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking", {"approver": "newcomer"})
    from django.contrib.auth import get_user_model

    newcomer = get_user_model().objects.get(username="newcomer")
    assert not newcomer.has_usable_password()
    assert [a.run_id for a in approval_selectors.pending_for(principal="newcomer")] == [run.id]


def test_an_administrators_inbox_lists_only_what_they_may_decide(engine_for, people):
    """A superuser is not every approver: an approval names who may decide, and `decide` refuses the
    superuser on approvals addressed to others. The inbox (`pending_for`: "pending approvals this
    principal may decide") must not offer them an approval they would be refused."""
    make_user("root", superuser=True)
    engine = engine_for(asking)
    run = engine.run("asking")
    with pytest.raises(SanomaError) as caught:
        approvals.decide(run_id=run.id, decision="approve", by="root", timeout=0)
    assert error_code(caught.value) == "not_approver"
    assert selectors.get_run(run_id=run.id, viewer="root") is not None  # an operator may look at it
    assert [a.approval_id for a in approval_selectors.pending_for(principal="root")] == []


# -- starting a workflow ---------------------------------------------------------------------------------


def test_a_user_without_the_start_permission_cannot_start(engine_for, people):
    engine = engine_for(asking, plain)
    with pytest.raises(SanomaError) as caught:
        engine.start("plain", by="stranger")
    assert error_code(caught.value) == "permission_denied"
    assert str(caught.value) == "stranger may not start plain"
    with pytest.raises(SanomaError) as caught:
        engine.start("plain", by="nobody-at-all")  # no such user
    assert error_code(caught.value) == "permission_denied"
    assert Run.objects.count() == 0


def test_an_inactive_user_is_told_their_account_is_inactive(engine_for, people):
    engine = engine_for(asking, plain)
    make_user("ivy", perms=["runs.start_workflow"])
    get_user_model().objects.filter(username="ivy").update(is_active=False)
    with pytest.raises(SanomaError) as caught:
        engine.start("plain", by="ivy")
    assert error_code(caught.value) == "permission_denied"
    assert str(caught.value) == "ivy may not start plain: their account is inactive"
    assert Run.objects.count() == 0


def test_the_object_permission_on_a_workflow_row_lets_a_user_start_that_workflow_only(engine_for, people):
    engine = engine_for(asking, plain)
    assign_perm("runs.start_workflow", people.stranger, workflow_entry("plain"))

    run = engine.run("plain", by="stranger")
    assert run.status == "finished" and run.started_by == "stranger"
    with pytest.raises(SanomaError) as caught:
        engine.start("asking", by="stranger")
    assert error_code(caught.value) == "permission_denied"
    assert Run.objects.filter(workflow="asking").count() == 0


def test_the_object_permission_granted_to_a_group_lets_its_members_start(engine_for, people):
    engine = engine_for(plain)
    assign_perm("runs.start_workflow", Group.objects.get(name="sales"), workflow_entry("plain"))
    assert engine.run("plain", by="dave").status == "finished"
    with pytest.raises(SanomaError):
        engine.start("plain", by="carol")


def test_the_global_start_permission_starts_any_workflow(engine_for, people):
    engine = engine_for(asking, plain)
    assert engine.run("plain", by="bob").status == "finished"
    assert engine.run("asking", by="bob").status == "waiting"


# -- seeing runs -------------------------------------------------------------------------------------------


def test_a_run_is_visible_to_its_starter_its_approvers_and_operators_only(engine_for, people):
    engine = engine_for(asking, plain)
    alices = engine.run("asking", {"approver": "marketing-lead"}, by="alice")
    grouped = engine.run("asking", {"approver": "group:marketing"}, by="alice")
    bobs = engine.run("plain", by="bob")

    assert visible_to("alice") == {alices.id, grouped.id}
    assert visible_to("bob") == {bobs.id}
    assert visible_to("marketing-lead") == {alices.id}
    assert visible_to("carol") == {grouped.id}
    assert visible_to("ops") == {alices.id, grouped.id, bobs.id}
    assert visible_to("stranger") == set()
    assert visible_to("dave") == set()

    assert selectors.get_run(run_id=bobs.id, viewer="alice") is None
    seen = selectors.get_run(run_id=bobs.id, viewer="ops")
    assert seen is not None and seen.id == bobs.id
    assert [r["type"] for r in selectors.ledger_of(run_id=bobs.id, viewer="ops")][0] == "run.started"
    with pytest.raises(SanomaError) as caught:
        selectors.result(run_id=bobs.id, viewer="alice", timeout=0)
    assert error_code(caught.value) == "run_not_found"
    assert selectors.result(run_id=bobs.id, viewer="bob", timeout=0) == {"ok": True}


def test_filters_apply_within_what_a_viewer_may_see(engine_for, people):
    engine = engine_for(asking, plain)
    waiting = engine.run("asking", by="alice")
    engine.run("plain", by="alice")
    engine.run("asking", by="bob")
    page = selectors.list_runs(viewer="alice", status="waiting")
    assert [r.id for r in page.runs] == [waiting.id] and page.total == 1


# -- the inbox's query count -------------------------------------------------------------------------------


def _inbox_queries(count: int) -> tuple[int, list[tuple[str, str, str, str, str]]]:
    with CaptureQueriesContext(connection) as queries:
        inbox = [(a.approval_id, a.run.id, a.run.workflow, a.run.status, a.run.started_by)
                 for a in approval_selectors.pending_for(principal="carol")]
    assert len(inbox) == count
    return len(queries), inbox


def test_the_inbox_costs_the_same_queries_for_3_and_for_30_pending_approvals(engine_for, people):
    engine = engine_for(asking)

    def fill(n: int) -> None:
        for i in range(n):
            # half addressed to carol herself, half to her group
            engine.start("asking", {"approver": "carol" if i % 2 else "group:marketing"})
        engine.drain()

    fill(3)
    few, inbox = _inbox_queries(3)
    assert all(status == "waiting" for _, _, _, status, _ in inbox)
    fill(27)
    many, inbox = _inbox_queries(30)
    newest_first = [run_id for _, run_id, _, _, _ in inbox]
    assert newest_first == [r.id for r in Run.objects.filter(workflow="asking").order_by("-created_at", "-id")]
    assert few == many, f"{few} queries for 3 approvals, {many} for 30"
    assert many <= 4, many
