"""An approver's badge and inbox read what a page shows, never every approval she holds (see
bench/parked.py for the figures at 100,000 parked runs):

- the badge counts at most 100 of her pending approvals (a LIMIT under the count): past 99 it
  says "99+";
- the inbox pages by key, newest first: a page reads its rows and one more, "next ›" reads those
  older than the last one shown (`?after=`), its foot counts up to 100 ("more than 100 approvals");
  a bad `after` says so and shows the newest; a filter or a search starts again at the newest;
- the runs list does not sort by "pending approvals" or "started by" (each would read and sort
  every run), even when a hand-made `?o=` asks.
"""
from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from pydantic import BaseModel

from runs.admin import approvals as approvals_admin
from runs.admin.approvals import ApprovalAdmin
from runs.approvals import selectors as approval_selectors
from runs.authoring import define_workflow
from runs.models import Approval, ApprovalStatus, Run
from runs.tests.browser_support import staff_user


class AskInput(BaseModel):
    approver: str = "amy"


def ask(ctx, input):
    ctx.approval("Let it through", approver=input.approver)
    return {"ok": True}


asking = define_workflow(name="asking", input=AskInput, uses=["approval"], run=ask)


def held(engine, n: int, approver: str = "amy") -> list[str]:
    """`n` runs held for `approver`, their approvals asked a minute apart (the last the newest)."""
    now = timezone.now()
    ids = []
    for i in range(n):
        run = engine.run("asking", {"approver": approver}, run_id=f"held-{i:03d}")
        Approval.objects.filter(run=run).update(requested_at=now - timedelta(minutes=n - i))
        ids.append(run.id)
    return ids


def signed_in(username: str) -> Client:
    client = Client()
    client.force_login(staff_user(username))
    return client


def head_of(page: str) -> str:
    """The list's header row."""
    found = re.search(r"<thead>.*?</thead>", page, re.S)
    assert found, "the list has no header"
    return found.group(0)


def rows(page: str) -> list[str]:
    """The run ids of the inbox's rows, in order."""
    return re.findall(r'/admin/runs/run/(held-\d+)/change/', page)


def foot(page: str) -> str:
    found = re.search(r'<span class="sanoma-count">([^<]*)</span>', page)
    assert found, "the inbox has no count at its foot"
    return found.group(1).strip()


def next_link(page: str) -> str | None:
    found = re.search(r'<a href="([^"]*)" class="sanoma-next"', page)
    return found.group(1).replace("&amp;", "&") if found else None


# -- the badge ----------------------------------------------------------------------------------------


def test_the_badge_counts_to_its_bound_then_says_99_plus(engine_for, monkeypatch):
    engine = engine_for(asking)
    staff_user("amy")
    assert approval_selectors.pending_badge(principal="amy") == ""
    held(engine, 3)
    assert approval_selectors.pending_badge(principal="amy") == "3"
    monkeypatch.setattr(approval_selectors, "BADGE_BOUND", 3)
    assert approval_selectors.pending_badge(principal="amy") == "3"  # exactly the bound: a number
    held_more = engine.run("asking", {"approver": "amy"}, run_id="held-more")
    assert approval_selectors.pending_badge(principal="amy") == "3+"
    with CaptureQueriesContext(connection) as queries:
        approval_selectors.pending_badge(principal="amy")
    counted = [q["sql"] for q in queries.captured_queries if "COUNT(" in q["sql"].upper()]
    assert len(counted) == 1 and "LIMIT 4" in counted[0], counted  # reads at most bound + 1
    # Decided, it leaves the badge: back to a number.
    Approval.objects.filter(run=held_more).update(status=ApprovalStatus.APPROVED)
    assert approval_selectors.pending_badge(principal="amy") == "3"


def test_the_desk_header_shows_the_badge_capped(engine_for, monkeypatch):
    engine = engine_for(asking)
    amy = signed_in("amy")
    assert 'class="sanoma-badge"' not in amy.get("/admin/").content.decode()
    held(engine, 3)
    monkeypatch.setattr(approval_selectors, "BADGE_BOUND", 2)
    page = amy.get("/admin/").content.decode()
    assert re.search(r'id="inbox-badge"[^>]*>Inbox <strong class="sanoma-badge">2\+</strong>', page), page[:2000]


# -- the inbox, paged by key ---------------------------------------------------------------------------


def test_the_inbox_pages_by_key_newest_first_and_counts_to_its_bound(engine_for, monkeypatch):
    engine = engine_for(asking)
    held(engine, 5)
    monkeypatch.setattr(ApprovalAdmin, "list_per_page", 2)
    monkeypatch.setattr(approvals_admin, "INBOX_COUNT_BOUND", 3)
    amy = signed_in("amy")

    first = amy.get("/admin/runs/approval/").content.decode()
    assert rows(first) == ["held-004", "held-003"]
    assert foot(first) == "more than 3 approvals"
    assert "‹ newest" not in first
    seen = rows(first)
    link = next_link(first)
    pages = [first]
    while link:
        assert "after=" in link and "p=" not in link
        with CaptureQueriesContext(connection) as queries:
            answer = amy.get("/admin/runs/approval/" + link)
        assert answer.status_code == 200
        page = answer.content.decode()
        sql = " ".join(q["sql"] for q in queries.captured_queries)
        assert "OFFSET" not in sql.upper()  # by key, never by skipping rows
        assert "‹ newest" in page and foot(page) == "more than 3 approvals"
        seen += rows(page)
        pages.append(page)
        link = next_link(page)
    assert seen == [f"held-{i:03d}" for i in range(4, -1, -1)]  # every approval once, newest first
    assert len(pages) == 3

    # Two decided while she reads: the count is exact again; the page after held-003 still follows it.
    Approval.objects.filter(run_id__in=["held-004", "held-000"]).update(status=ApprovalStatus.APPROVED)
    after = Approval.objects.get(run_id="held-003").pk
    page = amy.get(f"/admin/runs/approval/?after={after}").content.decode()
    assert rows(page) == ["held-002", "held-001"] and foot(page) == "3 approvals"
    assert next_link(page) is None


def test_each_page_of_the_inbox_costs_the_same_reads(engine_for, monkeypatch):
    engine = engine_for(asking)
    held(engine, 7)
    monkeypatch.setattr(ApprovalAdmin, "list_per_page", 2)
    amy = signed_in("amy")
    amy.get("/admin/runs/approval/")  # the session and caches warmed
    counts = []
    url = "/admin/runs/approval/"
    while url:
        with CaptureQueriesContext(connection) as queries:
            page = amy.get(url).content.decode()
        counts.append(len(queries))
        link = next_link(page)
        url = "/admin/runs/approval/" + link if link else ""
    assert len(counts) == 4
    # The first page does not look up an `after`; every later page one read more, and no more.
    assert counts[1] == counts[0] + 1 and len(set(counts[1:])) == 1, counts


@pytest.mark.parametrize("after", ["nope", "-1", "99999999", "1" * 30])
def test_a_bad_after_says_so_and_shows_the_newest(engine_for, monkeypatch, after):
    engine = engine_for(asking)
    held(engine, 3)
    monkeypatch.setattr(ApprovalAdmin, "list_per_page", 2)
    amy = signed_in("amy")
    page = amy.get(f"/admin/runs/approval/?after={after}").content.decode()
    assert rows(page) == ["held-002", "held-001"]
    said = f"No approval of your inbox to page after (after=&#x27;{after[:40]}&#x27;): showing the newest"
    assert said in page


def test_an_approval_of_someone_else_is_no_place_to_page_from(engine_for, monkeypatch):
    engine = engine_for(asking)
    held(engine, 3)
    bob_run = engine.run("asking", {"approver": "bob"}, run_id="held-bob")
    monkeypatch.setattr(ApprovalAdmin, "list_per_page", 2)
    theirs = Approval.objects.get(run=bob_run).pk
    page = signed_in("amy").get(f"/admin/runs/approval/?after={theirs}").content.decode()
    assert "No approval of your inbox to page after" in page and rows(page) == ["held-002", "held-001"]


def test_a_filter_or_a_search_starts_again_at_the_newest(engine_for, monkeypatch):
    engine = engine_for(asking)
    held(engine, 4)
    monkeypatch.setattr(ApprovalAdmin, "list_per_page", 2)
    amy = signed_in("amy")
    link = next_link(amy.get("/admin/runs/approval/").content.decode())
    assert link is not None
    second = amy.get("/admin/runs/approval/" + link)
    page = second.content.decode()
    assert rows(page) == ["held-001", "held-000"]
    links = re.findall(r'href="(\?[^"]*status=all[^"]*)"', page)
    assert links and all("after=" not in link for link in links), links
    everything = amy.get("/admin/runs/approval/" + links[0].replace("&amp;", "&")).content.decode()
    assert rows(everything)[:2] == ["held-003", "held-002"]


def test_the_inbox_columns_do_not_sort(engine_for):
    engine = engine_for(asking)
    held(engine, 2)
    page = signed_in("amy").get("/admin/runs/approval/").content.decode()
    assert "sortable" not in head_of(page)


# -- the runs list's sorts -----------------------------------------------------------------------------


def test_the_runs_list_does_not_sort_by_pending_approvals_or_starter(engine_for):
    engine = engine_for(asking)
    held(engine, 3)
    # Sorted by either column, held-001 would come first or last, never between the other two.
    Run.objects.filter(pk="held-001").update(started_by="aaa")
    Approval.objects.filter(run_id="held-001").update(status=ApprovalStatus.APPROVED)
    root = Client()
    user = staff_user("root")
    user.is_superuser = True
    user.save()
    root.force_login(user)
    page = root.get("/admin/runs/run/").content.decode()
    head = head_of(page)
    sortable = re.findall(r'<th scope="col" class="sortable column-(\w+)', head)
    assert sortable == ["id", "workflow", "status", "started"], sortable
    assert "column-pending_approvals" in head and "column-started_by" in head
    newest_first = ["held-002", "held-001", "held-000"]
    assert re.findall(r"/admin/runs/run/(held-\d+)/change/", page) == newest_first
    # A hand-made sort by either column is ignored: the default order, not a sort of every run.
    for column in ("4", "-4", "6", "-6"):
        answer = root.get(f"/admin/runs/run/?o={column}")
        assert answer.status_code == 200
        assert re.findall(r"/admin/runs/run/(held-\d+)/change/", answer.content.decode()) == newest_first
    # The columns that do sort still do: by id, descending.
    answer = root.get("/admin/runs/run/?o=-1")
    assert re.findall(r"/admin/runs/run/(held-\d+)/change/", answer.content.decode()) == newest_first
    answer = root.get("/admin/runs/run/?o=1")
    assert re.findall(r"/admin/runs/run/(held-\d+)/change/", answer.content.decode()) == newest_first[::-1]


def test_an_approvers_runs_list_pages_her_runs_with_their_pending_counts(engine_for, monkeypatch):
    """Her page's runs are read by key after the page is chosen (`KeysFirstPaginator`): the same
    runs, in the same order, with the same pending counts as a list read in one query."""
    from runs.admin.runs import RunAdmin

    engine = engine_for(asking)
    held(engine, 5)
    engine.run("asking", {"approver": "bob"}, run_id="held-bob")  # not hers: not in her list
    Approval.objects.filter(run_id="held-003").update(status=ApprovalStatus.APPROVED)
    monkeypatch.setattr(RunAdmin, "list_per_page", 2)
    amy = signed_in("amy")
    seen: list[tuple[str, str]] = []
    for number in (1, 2, 3):
        page = amy.get(f"/admin/runs/run/?p={number}").content.decode()
        seen += re.findall(r'/admin/runs/run/(held-[\w-]+)/change/.*?<td class="field-pending_approvals">(\d+)</td>',
                           page, re.S)
    assert seen == [("held-004", "1"), ("held-003", "0"), ("held-002", "1"), ("held-001", "1"), ("held-000", "1")]
