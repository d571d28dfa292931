"""Parked runs cost nothing: what the inbox, the badge and the runs list read is what their viewer
holds, never every parked run (see bench/parked.py for the figures at 100,000 parked runs).

- An approval names its approver, which is the grant: a held run writes no permission row, and a
  reassigned approval leaves its former approver a `runs.view_run` row, seeing the run.
- What a person may decide is read by their names (username, `group:<name>`) from an index of the
  pending approvals by approver; what they may see by key from their own rows and names (a UNION
  of indexed reads), never by an OR of joins with DISTINCT over every row.
- The runs list filtered by status, newest first, has an index of its own.
"""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from guardian.shortcuts import assign_perm
from pydantic import BaseModel

from runs import selectors
from runs.approvals import selectors as approval_selectors
from runs.approvals.permissions import (
    can_decide,
    check_can_view,
    decidable_approvals,
    grant_approver,
    principal_of,
    revoke_approver,
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
def test_a_held_run_writes_no_permission_row_its_approver_decides_and_sees_it_by_name(engine_for, people, approver):
    engine = engine_for(asking)
    with CaptureQueriesContext(connection) as queries:
        run = engine.run("asking", {"approver": approver})
    approval = Approval.objects.get(run=run)
    # The approval names its approver, which is the grant: guardian's tables get no row per held run.
    assert _rows(approval) == {"approval users": set(), "approval groups": set(), "run users": set(),
                               "run groups": set()}
    assert not [q["sql"] for q in queries.captured_queries if "objectpermission" in q["sql"].lower()]
    expected = {"lead"} if approver == "lead" else {"carol"}
    for name in ("lead", "carol", "dave"):
        who = principal_of(name)
        assert can_decide(who, approval) is (name in expected), name
        assert check_can_view(who, run, raise_error=False) is (name in expected), name
        assert [a.pk for a in approval_selectors.pending_for(principal=name)] == \
            ([approval.pk] if name in expected else []), name

    # Granted again (a rejudge reassigning it back): nothing written, one read (the holder's row).
    with CaptureQueriesContext(connection) as queries:
        grant_approver(approval)
    assert len(queries) == 1, [q["sql"] for q in queries.captured_queries]


def test_an_approval_taken_from_its_approver_leaves_them_seeing_its_run_not_deciding_it(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking", {"approver": "group:marketing"})
    approval = Approval.objects.get(run=run)
    Approval.objects.filter(pk=approval.pk).update(approver="lead")  # as a rejudge reassigns it
    revoke_approver(approval)
    moved = Approval.objects.get(pk=approval.pk)
    carol = principal_of("carol")
    assert not can_decide(carol, moved) and can_decide(principal_of("lead"), moved)
    assert check_can_view(carol, run, raise_error=False)
    assert approval_selectors.pending_count(principal="carol") == 0
    assert _rows(moved)["run groups"] == {("marketing", "view_run")}


def test_a_new_person_named_as_approver_is_made_and_granted(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking", {"approver": "newcomer"})
    approval = Approval.objects.get(run=run)
    assert principal_of("newcomer").user is not None
    assert [a.pk for a in approval_selectors.pending_for(principal="newcomer")] == [approval.pk]


# -- reading what a person holds -------------------------------------------------------------------------


def test_an_approval_is_in_the_inbox_of_every_member_of_its_group_once(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking", {"approver": "group:sales"})
    approval = Approval.objects.get(run=run)
    carol = principal_of("carol")  # in marketing and sales
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


def test_the_reads_are_by_key_from_the_viewers_own_names_and_rows_not_a_distinct_join(people):
    """The shapes that keep them flat: the approvals by their approver's names (an index of its own),
    the runs `pk IN (... UNION ALL ...)`; no DISTINCT over joined rows."""
    approvals = str(decidable_approvals(principal_of("carol")).query).upper()
    assert '"APPROVER" IN' in approvals and "JOIN" not in approvals and "DISTINCT" not in approvals, approvals
    runs = str(visible_runs(principal_of("carol")).query).upper()
    assert "UNION ALL" in runs and "DISTINCT" not in runs, runs
    indexes = {index.name: (index.fields, index.condition) for index in Approval._meta.indexes}
    assert indexes["approval_approver_pending"][0] == ["approver", "-requested_at", "-id"]
    assert indexes["approval_approver_pending"][1] is not None  # pending ones alone


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
