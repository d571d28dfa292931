"""Every list of the API is paged the DRF way; the runs list filters; run ids with every allowed
character work in every URL; and a list costs the same number of queries for 3 rows as for 12."""
from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from runs.api import views
from runs.models import Run, RunStatus, RunTag
from runs.testing import make_user
from runs.tests.test_api import ask_flow, client_for, money_needs_bob, nap_flow, post, refund_flow


@pytest.fixture
def engine(engine_for):
    return engine_for(refund_flow, ask_flow, nap_flow, policy=money_needs_bob)


@pytest.fixture
def people(alice):
    return {"alice": alice, "bob": make_user("bob"),
            "olga": make_user("olga", perms=["runs.view_any_run", "runs.operate_runs"])}


@pytest.fixture
def held(engine, people):
    """A refund run alice started, held by the policy for bob."""
    return engine.run("refund", {"order_id": "1", "amount": 10})


@pytest.fixture
def fast_decide(monkeypatch):
    monkeypatch.setattr(views, "DECIDE_WAIT_SECONDS", 0.2)


def follow(client, url: str) -> list[dict]:
    """Every item of a list, read page by page through the `next` links."""
    items: list[dict] = []
    while url:
        page = client.get(url)
        assert page.status_code == 200, page.content
        body = page.json()
        items += body["results"]
        url = body["next"] and urlsplit(body["next"])._replace(scheme="", netloc="").geturl()
    return items


def test_the_runs_list_pages_with_count_and_links(engine, people):
    for n in range(5):
        engine.start("nap", run_id=f"nap-{n}")
    client = client_for(people["olga"])
    first = client.get("/api/runs?limit=2").json()
    assert first["count"] == 5 and [r["run_id"] for r in first["results"]] == ["nap-4", "nap-3"]
    assert first["previous"] is None and first["next"] == "http://testserver/api/runs?limit=2&offset=2"
    last = client.get("/api/runs?limit=2&offset=4").json()
    assert last["next"] is None and last["previous"] == "http://testserver/api/runs?limit=2&offset=2"
    assert [r["run_id"] for r in follow(client, "/api/runs?limit=2")] == [f"nap-{n}" for n in (4, 3, 2, 1, 0)]


def test_the_runs_list_filters_by_each_field(engine, people):
    engine.start("nap", run_id="early")
    refund = engine.run("refund", {"order_id": "1", "amount": 10}, run_id="held")
    engine.start("nap", run_id="bobs")
    Run.objects.filter(pk="early").update(created_at=timezone.now() - timedelta(days=3))
    Run.objects.filter(pk="bobs").update(status=RunStatus.FAILED, started_by="olga",
                                         error={"code": "driver_failed", "message": "x"})
    RunTag.objects.create(run=refund, key="order", value="1")
    client = client_for(people["olga"])

    def ids(query: str) -> list[str]:
        answer = client.get(f"/api/runs?{query}")
        assert answer.status_code == 200, answer.content
        return [r["run_id"] for r in answer.json()["results"]]

    assert ids("status=waiting") == ["held", "early"]
    assert ids("workflow=refund") == ["held"]
    assert ids("started_by=olga") == ["bobs"]
    assert ids("tag=order=1") == ["held"]
    assert ids("tag=order=1&tag=order=2") == []
    assert ids("error_code=driver_failed") == ["bobs"]
    since = (timezone.now() - timedelta(days=1)).date().isoformat()
    assert ids(f"since={since}") == ["bobs", "held"]
    assert ids(f"until={since}") == ["early"]
    assert ids(f"status=waiting&since={since}") == ["held"]


@pytest.mark.parametrize(("query", "parameter"), [
    ("status=sleeping", "status"), ("since=yesterday", "since"), ("until=2026-13-01", "until"),
    ("tag=order", "tag"), ("limit=0", "limit"), ("limit=501", "limit"), ("offset=-1", "offset"),
    ("offset=x", "offset"), ("statuss=waiting", "statuss"),
])
def test_a_bad_filter_or_page_is_400_naming_the_parameter(engine, people, query, parameter):
    answer = client_for(people["olga"]).get(f"/api/runs?{query}")
    assert answer.status_code == 400, answer.content
    said = answer.json()
    assert said["code"] == "invalid_input" and [i["path"] for i in said["issues"]] == [[parameter]]


def test_the_ledger_is_cursor_paged_in_order(held, people):
    client = client_for(people["alice"])
    whole = client.get(f"/api/runs/{held.id}").json()["ledger"]
    first = client.get(f"/api/runs/{held.id}/ledger?limit=1").json()
    assert set(first) == {"next", "previous", "results"} and first["previous"] is None
    assert [r["id"] for r in follow(client, f"/api/runs/{held.id}/ledger?limit=1")] == [r["id"] for r in whole]
    assert len(whole) == 3
    for cursor in ("nope", "cD1hYmM=", "bz0tMQ=="):  # not base64; p=abc; o=-1
        bad = client.get(f"/api/runs/{held.id}/ledger?cursor={cursor}")
        assert bad.status_code == 400, cursor
        assert bad.json()["issues"][0]["path"] == ["cursor"]


@pytest.mark.parametrize("url", ["/api/workflows", "/api/connectors", "/api/approvals", "/api/pauses",
                                 "/api/runs/{run}/approvals", "/api/scenarios"])
def test_every_list_answers_a_page(held, people, url):
    answer = client_for(people["bob"] if "approvals" in url else people["olga"]).get(url.format(run=held.id))
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert set(body) == {"count", "next", "previous", "results"}
    assert body["count"] == len(body["results"]) or body["next"] is not None
    assert client_for(people["olga"]).get(f"{url.format(run=held.id)}?limit=0").status_code == 400


def test_the_inbox_pages_newest_first(engine, people):
    for n in range(3):
        engine.run("ask", run_id=f"ask-{n}")
    client = client_for(people["bob"])
    assert [i["run"]["run_id"] for i in follow(client, "/api/approvals?limit=2")] == ["ask-2", "ask-1", "ask-0"]


# ---- run ids with every character the rule allows ----------------------------------------------

ODD_ID = "a.b:c@d~e_f-1"


def test_a_run_id_with_every_allowed_character_works_in_every_url(engine, people, fast_decide):
    engine.run("ask", run_id=ODD_ID)
    olga, bob = client_for(people["olga"]), client_for(people["bob"])
    base = f"/api/runs/{ODD_ID}"
    assert olga.get(base).json()["run"]["run_id"] == ODD_ID
    assert olga.get(f"{base}/ledger").json()["results"][0]["run_id"] == ODD_ID
    assert olga.get(f"{base}/result").json()["code"] == "run_running"
    assert olga.get(f"{base}/approvals").json()["results"][0]["run_id"] == ODD_ID
    assert olga.get(f"{base}/approvals/approval-1").json()["run_id"] == ODD_ID
    assert post(olga, f"{base}/messages", {"topic": "t", "payload": {}}).json()["run_id"] == ODD_ID
    decided = post(bob, f"{base}/approvals/approval-1", {"decision": "approve"})
    assert decided.status_code in (200, 202), decided.content
    root = client_for(make_user("root", superuser=True))
    # found, then refused for what the run is (not in doubt, not failed): never a 404, never the id rule
    assert post(root, f"{base}/fork", {"from_step": 1}).status_code in (201, 400, 409)
    for action, body in (("in-doubt", {"happened": False}), ("rerun", {})):
        answer = post(root, f"{base}/{action}", body)
        assert answer.status_code in (200, 201, 400, 409), (action, answer.content)
        assert "run id" not in answer.json().get("error", "").lower(), action
    cancelled = post(root, f"{base}/cancel", {"reason": "test"})
    assert cancelled.status_code in (200, 409) and cancelled.json().get("code") != "run_not_found"
    child = f"{ODD_ID}.1"  # a child run's id: <parent>.<n>
    assert olga.get(f"/api/runs/{child}").json()["code"] == "run_not_found"  # routed, looked up, not there
    assert olga.get(f"/api/runs/{child}/ledger").json()["code"] == "run_not_found"
    assert olga.get("/api/runs/a%2Fb").json()["code"] == "not_found"  # a slash is never part of an id


# ---- query counts ---------------------------------------------------------------------------------


def queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_the_lists_cost_the_same_queries_for_3_rows_as_for_12(engine, people):
    olga, bob = client_for(people["olga"]), client_for(people["bob"])
    engine.run("ask", run_id="ask-0")
    for n in range(1, 3):
        engine.run("ask", run_id=f"ask-{n}")
    few = {url: queries(olga if "approvals" not in url else bob, url)
           for url in ("/api/runs", "/api/approvals", "/api/runs/ask-0/ledger")}
    for n in range(3, 12):
        engine.run("ask", run_id=f"ask-{n}")
    post(bob, "/api/runs/ask-0/approvals", {"decision": "approve"})
    engine.drain()
    many = {url: queries(olga if "approvals" not in url else bob, url) for url in few}
    assert many == few
