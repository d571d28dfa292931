"""Parked runs cost nothing: what the inbox, the badge and the runs list read is what their viewer
holds, never every parked run (see bench/parked.py for the figures at 100,000 parked runs).

- An approval is granted to its approver (guardian's rows) in four queries, the same rows as
  guardian's `assign_perm` wrote, and granting again changes nothing.
- What a person may decide or see is found by key from their own permission rows (a UNION of
  indexed reads), never by an OR of joins with DISTINCT over every row: each run or approval once,
  however many ways it is granted.
- The runs list filtered by status, newest first, has an index of its own.
"""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext
from guardian.shortcuts import assign_perm, get_groups_with_perms, get_users_with_perms
from pydantic import BaseModel

from runs import selectors
from runs.approvals import selectors as approval_selectors
from runs.approvals.permissions import (
    decidable_approvals,
    grant_approver,
    principal_of,
    visible_runs,
)
from runs.authoring import define_workflow
from runs.models import (
    Approval,
    ApprovalGroupObjectPermission,
    ApprovalUserObjectPermission,
    Run,
    RunGroupObjectPermission,
    RunUserObjectPermission,
)
from runs.testing import make_user


class AskInput(BaseModel):
    approver: str = "lead"


def ask(ctx, input):
    ctx.approval("Let it through", approver=input.approver)
    return {"ok": True}


asking = define_workflow(name="asking", input=AskInput, uses=["approval"], run=ask)


@pytest.fixture
def people(db):
    make_user("lead")
    make_user("carol", groups=["marketing", "sales"], perms=["runs.start_workflow"])
    make_user("dave", groups=["sales"])
    make_user("ops", perms=["runs.view_any_run"])


def _rows(approval: Approval) -> dict[str, set]:
    return {
        "approval users": set(ApprovalUserObjectPermission.objects.filter(content_object=approval)
                              .values_list("user__username", "permission__codename")),
        "approval groups": set(ApprovalGroupObjectPermission.objects.filter(content_object=approval)
                               .values_list("group__name", "permission__codename")),
        "run users": set(RunUserObjectPermission.objects.filter(content_object_id=approval.run_id)
                         .values_list("user__username", "permission__codename")),
        "run groups": set(RunGroupObjectPermission.objects.filter(content_object_id=approval.run_id)
                          .values_list("group__name", "permission__codename")),
    }


# -- granting an approval ---------------------------------------------------------------------------------


@pytest.mark.parametrize("approver", ["lead", "group:marketing"])
def test_an_approver_is_granted_what_guardian_would_grant_in_four_queries_and_once(engine_for, people, approver):
    engine = engine_for(asking)
    run = engine.run("asking", {"approver": approver})
    approval = Approval.objects.get(run=run)
    granted = _rows(approval)
    if approver == "lead":
        assert granted == {"approval users": {("lead", "decide_approval")}, "approval groups": set(),
                           "run users": {("lead", "view_run")}, "run groups": set()}
    else:
        assert granted == {"approval users": set(), "approval groups": {("marketing", "decide_approval")},
                           "run users": set(), "run groups": {("marketing", "view_run")}}

    # Guardian's own reading of the rows agrees: the approver may decide it and see its run.
    holders: Any = get_users_with_perms(approval, only_with_perms_in=["decide_approval"], with_group_users=True)
    expected = {"lead"} if approver == "lead" else {"carol"}
    assert {user.get_username() for user in holders} == expected
    if approver != "lead":
        groups: Any = get_groups_with_perms(run)
        assert {g.name for g in groups} == {"marketing"}
    for name in expected:
        assert principal_of(name).user.has_perm("runs.decide_approval", approval)
        assert principal_of(name).user.has_perm("runs.view_run", run)

    # Granted again (a rejudge reassigning it back): nothing added, nothing refused, four queries.
    with CaptureQueriesContext(connection) as queries:
        grant_approver(approval)
    assert _rows(approval) == granted
    assert len(queries) == 4, [q["sql"] for q in queries.captured_queries]


def test_a_new_person_named_as_approver_is_made_and_granted(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking", {"approver": "newcomer"})
    approval = Approval.objects.get(run=run)
    assert _rows(approval)["approval users"] == {("newcomer", "decide_approval")}
    assert [a.pk for a in approval_selectors.pending_for(principal="newcomer")] == [approval.pk]


# -- reading what a person holds -------------------------------------------------------------------------


def test_an_approval_granted_two_ways_is_in_the_inbox_once(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking", {"approver": "group:marketing"})
    approval = Approval.objects.get(run=run)
    carol = principal_of("carol")
    assign_perm("runs.decide_approval", carol.user, approval)  # to her too, and to her other group
    assign_perm("runs.decide_approval", Group.objects.get(name="sales"), approval)
    assert [a.pk for a in decidable_approvals(carol)] == [approval.pk]
    assert approval_selectors.pending_count(principal="carol") == 1
    assert [a.pk for a in approval_selectors.inbox(principal="carol")] == [approval.pk]
    assert approval_selectors.pending_count(principal="dave") == 1  # through sales alone
    assert approval_selectors.pending_count(principal="lead") == 0


def test_a_run_granted_and_started_by_the_same_person_is_listed_once(engine_for, people):
    engine = engine_for(asking)
    own = engine.run("asking", {"approver": "group:marketing"}, by="carol")
    other = engine.run("asking", {"approver": "group:sales"})
    assign_perm("runs.view_run", principal_of("carol").user, own)
    page = selectors.list_runs(viewer="carol", status="waiting")
    assert sorted(r.id for r in page.runs) == sorted([own.id, other.id]) and page.total == 2
    assert visible_runs(principal_of("dave")).count() == 1
    assert [r.id for r in selectors.list_runs(viewer="dave").runs] == [other.id]
    assert selectors.list_runs(viewer="lead").total == 0
    assert selectors.list_runs(viewer="ops").total == 2


def test_the_reads_are_by_key_from_the_viewers_own_rows_not_a_distinct_join(people):
    """The shape that keeps them flat: `pk IN (... UNION ALL ...)`, no DISTINCT over joined rows."""
    for query in (decidable_approvals(principal_of("carol")), visible_runs(principal_of("carol"))):
        sql = str(query.query).upper()
        assert "UNION ALL" in sql and "DISTINCT" not in sql, sql


def test_the_badge_costs_the_same_queries_whatever_is_pending_for_others(engine_for, people):
    engine = engine_for(asking)
    engine.run("asking", {"approver": "group:marketing"})

    def counted() -> tuple[int, int]:
        with CaptureQueriesContext(connection) as queries:
            count = approval_selectors.pending_count(principal="carol")
        return count, len(queries)

    before = counted()
    for _ in range(5):
        engine.start("asking", {"approver": "group:sales2"})
    engine.drain()
    assert counted() == before == (1, before[1])


def test_runs_have_an_index_for_a_list_by_status_newest_first():
    indexes = {index.name: index.fields for index in Run._meta.indexes}
    assert indexes["run_status_created"] == ["status", "-created_at", "-id"]


def test_the_values_a_run_column_takes_are_read_from_its_index_each_once(engine_for, people):
    engine = engine_for(asking, define_workflow(name="plain", run=lambda ctx, input: {"ok": True}))
    for workflow, by in (("asking", "carol"), ("plain", "alice"), ("asking", "alice"), ("plain", "carol")):
        engine.run(workflow, {"approver": "lead"} if workflow == "asking" else {}, by=by)
    assert selectors.distinct_run_values("workflow") == ["asking", "plain"]
    assert selectors.distinct_run_values("started_by") == ["alice", "carol"]
    with pytest.raises(ValueError):
        selectors.distinct_run_values("input")


def test_the_desk_lists_every_workflow_and_starter_to_filter_by(engine_for, people, client):
    engine = engine_for(asking, define_workflow(name="plain", run=lambda ctx, input: {"ok": True}))
    engine.run("asking", {"approver": "group:marketing"}, by="carol")
    engine.run("plain", by="alice")
    ops = make_user("desk-ops", perms=["runs.view_any_run"])
    ops.is_staff = True
    ops.save()
    carol = principal_of("carol").user
    carol.is_staff = True
    carol.save()
    client.force_login(ops)
    page = client.get("/admin/runs/run/").content.decode()
    for choice in ("?workflow=asking", "?workflow=plain", "?started_by=alice", "?started_by=carol"):
        assert choice in page, choice
    client.force_login(carol)  # not an operator: the values of the runs she may see
    page = client.get("/admin/runs/run/").content.decode()
    assert "?workflow=asking" in page and "?workflow=plain" not in page
