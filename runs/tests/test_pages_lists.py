"""The runs list's counts are bounded: a list of many parked runs reads what a list of COUNT_BOUND
does. Counted past the bound, the desk and the API say "more than N" and still lead to the next page;
the date bar reads one EXISTS a period, and finds the periods Django's own read finds.

The bound is 10,000; these tests set it to 3 (and the desk's page to 2 runs) so a handful of real
runs, started and parked by the engine, goes past it.
"""
from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from runs import selectors
from runs.admin import run_list
from runs.admin.run_list import periods_with_runs
from runs.admin.runs import RunAdmin
from runs.models import Run, RunStatus
from runs.selectors import Counted, bounded_count
from runs.testing import make_user
from runs.tests.test_api import client_for, nap_flow

BOUND = 3


@pytest.fixture
def bound(monkeypatch):
    monkeypatch.setattr(selectors, "COUNT_BOUND", BOUND)
    monkeypatch.setattr(RunAdmin, "list_per_page", 2)


@pytest.fixture
def olga(db):
    user = make_user("olga", perms=["runs.view_any_run", "runs.operate_runs"])
    user.is_staff = True
    user.save()
    return user


@pytest.fixture
def napping(engine_for, olga):
    """Seven runs asleep (waiting), started a minute apart, nap-0 the oldest."""
    engine = engine_for(nap_flow)
    now = timezone.now()
    for n in range(7):
        run = engine.run("nap", {}, run_id=f"nap-{n}")
        assert run.status == RunStatus.WAITING
        Run.objects.filter(pk=run.id).update(created_at=now - timedelta(minutes=10 - n))
    return engine


def desk(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def text(html: bytes) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html.decode()))


# -- the count -------------------------------------------------------------------------------------------


def test_a_count_is_exact_up_to_its_bound_and_more_than_the_bound_past_it(napping):
    runs = Run.objects.filter(status=RunStatus.WAITING)
    assert bounded_count(runs, bound=7) == Counted(7)
    assert bounded_count(runs, bound=6) == Counted(6, exact=False)
    assert str(bounded_count(runs, bound=6)) == "more than 6"
    assert bounded_count(runs, start=4, bound=2) == Counted(6, exact=False)  # from the page's start on
    assert bounded_count(runs, start=4, bound=3) == Counted(7)
    with CaptureQueriesContext(connection) as read:
        bounded_count(runs, bound=2)
    assert len(read) == 1 and "LIMIT 3" in read[0]["sql"]  # reads no more than the bound and one


def test_list_runs_says_when_its_total_is_a_lower_bound(napping, bound):
    first = selectors.list_runs(viewer="olga", status=RunStatus.WAITING, limit=2)
    assert [r.id for r in first.runs] == ["nap-6", "nap-5"]
    assert (first.total, first.total_exact, str(first.counted)) == (3, False, "more than 3")
    last = selectors.list_runs(viewer="olga", status=RunStatus.WAITING, limit=2, offset=6)
    assert (last.total, last.total_exact, [r.id for r in last.runs]) == (7, True, ["nap-0"])


# -- the API -----------------------------------------------------------------------------------------------


def test_the_api_runs_list_says_count_exact_and_its_next_links_reach_every_run(napping, bound, olga):
    client = client_for(olga)
    first = client.get("/api/runs?status=waiting&limit=2").json()
    assert (first["count"], first["count_exact"]) == (3, False)
    assert first["next"] == "http://testserver/api/runs?limit=2&offset=2&status=waiting"
    seen, url, counts = [], "/api/runs?status=waiting&limit=2", []
    while url:
        body = client.get(url).json()
        seen += [r["run_id"] for r in body["results"]]
        counts.append((body["count"], body["count_exact"]))
        url = body["next"] and urlsplit(body["next"])._replace(scheme="", netloc="").geturl()
    assert seen == [f"nap-{n}" for n in range(6, -1, -1)]
    assert counts == [(3, False), (5, False), (7, True), (7, True)]
    small = client.get("/api/runs?status=failed").json()
    assert (small["count"], small["count_exact"], small["next"]) == (0, True, None)


def test_the_api_schema_names_count_exact_on_the_runs_list_only(olga, db):
    schema = client_for(olga).get("/api/schema/?format=json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    runs = paths["/api/runs"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    components = schema.json()["components"]["schemas"]
    listed = components[runs["$ref"].rsplit("/", 1)[1]] if "$ref" in runs else runs
    assert "count_exact" in listed["properties"] and "count_exact" in listed["required"]


def test_the_runs_command_says_more_than(napping, bound):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("runs", "--status", "waiting", "--limit", "2", stdout=out)
    assert out.getvalue().splitlines()[-1] == "1-2 of more than 3"


# -- the desk ----------------------------------------------------------------------------------------------


def test_the_desk_list_counts_to_its_bound_and_offers_the_next_page(napping, bound, olga):
    page = desk(olga).get("/admin/runs/run/?status__exact=waiting")
    assert page.status_code == 200
    said = text(page.content)
    assert "more than 3 runs" in said
    assert "next ›" in said and "‹ previous" not in said
    assert 'href="?p=2&amp;status__exact=waiting"' in page.content.decode()
    # Filtered: the search box's counts, both bounded (every run the viewer may see is 7 as well).
    assert "more than 3 results ( more than 3 total )" in said

    second = text(desk(olga).get("/admin/runs/run/?status__exact=waiting&p=2").content)
    assert "more than 5 runs" in second  # counted on from page 2's start
    assert "Show all" not in second  # it would read every run
    assert "Select all more than 5 runs" in second and "All more than 5 selected" in second

    shown = desk(olga).get("/admin/runs/run/?status__exact=waiting&all=")  # asked anyway: a page, not all
    assert len(re.findall(r'name="_selected_action"', shown.content.decode())) == 2
    last = desk(olga).get("/admin/runs/run/?status__exact=waiting&p=4")
    said = text(last.content)
    assert "7 runs" in said and "more than" not in said.split("Search")[-1].split("runs")[0]
    assert "next ›" not in said and "‹ previous" in said
    assert "nap-0" in said and "nap-1" not in said


def test_the_desk_list_unfiltered_reads_no_second_count_and_exact_when_small(napping, olga):
    with CaptureQueriesContext(connection) as read:
        page = desk(olga).get("/admin/runs/run/")
    assert page.status_code == 200 and "7 runs" in text(page.content)
    sql = [q["sql"] for q in read.captured_queries]
    counts = [q for q in sql if re.match(r'SELECT COUNT\(\*\)( AS "__count")? FROM (\(SELECT )?"runs_run"', q)]
    assert counts == ['SELECT COUNT(*) FROM (SELECT "runs_run"."id" AS "pk" FROM "runs_run" LIMIT 10001) subquery']
    assert not any("TRUNC" in q.upper() for q in sql)  # the date bar: an EXISTS a period, no day of every run
    assert len([q for q in sql if 'MIN("runs_run"."created_at")' in q]) == 1  # read once, by Django and the bar


def test_the_status_filter_counts_are_bounded(napping, olga, monkeypatch):
    monkeypatch.setattr(run_list, "FACET_BOUND", 3)
    page = text(desk(olga).get("/admin/runs/run/?_facets=True").content)
    assert "Waiting (more than 3)" in page and "Failed (0)" in page


def test_a_bad_page_is_the_list_error_not_a_crash(napping, bound, olga):
    answer = desk(olga).get("/admin/runs/run/?p=99")
    assert answer.status_code == 302 and answer["Location"].endswith("?e=1")


# -- the date bar -----------------------------------------------------------------------------------------


@pytest.fixture
def spread(napping):
    """The seven runs over two years, two months and three days."""
    at = {"nap-0": datetime(2025, 11, 3, 9, tzinfo=UTC), "nap-1": datetime(2026, 2, 1, 9, tzinfo=UTC),
          "nap-2": datetime(2026, 2, 1, 10, tzinfo=UTC), "nap-3": datetime(2026, 2, 14, 9, tzinfo=UTC),
          "nap-4": datetime(2026, 2, 28, 23, tzinfo=UTC), "nap-5": datetime(2026, 4, 2, 9, tzinfo=UTC),
          "nap-6": datetime(2026, 4, 2, 9, 30, tzinfo=UTC)}
    for run_id, moment in at.items():
        Run.objects.filter(pk=run_id).update(created_at=moment)
    return at


@pytest.mark.parametrize("narrowed, kind", [({}, "year"), ({"created_at__year": 2026}, "month"),
                                             ({"created_at__year": 2026, "created_at__month": 2}, "day")])
def test_the_date_bar_finds_the_periods_django_finds_in_one_query(spread, narrowed, kind):
    runs = Run.objects.filter(**narrowed)
    with CaptureQueriesContext(connection) as read:
        found = periods_with_runs(runs, "created_at", kind)
    assert found == list(runs.datetimes("created_at", kind))
    assert len(read) == 2  # the first and last start, then one EXISTS a period
    assert "DISTINCT" not in read[1]["sql"].upper()


def test_the_desk_date_bar_lists_years_then_months(spread, olga):
    years = text(desk(olga).get("/admin/runs/run/").content)
    assert "2025" in years and "2026" in years
    months = text(desk(olga).get("/admin/runs/run/?created_at__year=2026").content)
    assert all(m in months for m in ("February 2026", "April 2026")) and "March 2026" not in months
    empty = desk(olga).get("/admin/runs/run/?status__exact=failed")
    assert empty.status_code == 200 and "0 runs" in text(empty.content)
