"""The API and the admin of recovery: rerun, fork, bulk rerun and cancel, pauses, run filters."""
from __future__ import annotations

import json

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from connectors import DriverError
from runs.models import Pause, Run, RunStatus
from runs.seed import seed_person
from runs.tests.fixtures import TAGGED_FLOW

flow = TAGGED_FLOW
OPERATOR_PERMS = ["runs.view_any_run", "runs.operate_runs", "runs.rerun_runs", "runs.pause"]


@pytest.fixture
def engine(engine_for, db):
    return engine_for(flow)


@pytest.fixture
def ops(db):
    return seed_person(username="ops", perms=OPERATOR_PERMS, staff=True)


def api_for(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def post(client, url, body=None):
    return client.post(url, data=json.dumps(body) if body is not None else None, content_type="application/json")


def failed(engine, label: str) -> Run:
    engine.fake.fail_next("acme.mail.send", DriverError("mail down", retryable=False))
    return engine.run("flow", {"label": label})


def test_the_api_reruns_forks_and_filters(engine, ops, alice):
    api = api_for(ops)
    source = failed(engine, "a")
    rerun = post(api, f"/api/runs/{source.id}/rerun")
    assert rerun.status_code == 201, rerun.content
    assert rerun.json()["run_id"] == f"{source.id}~1"
    fork = post(api, f"/api/runs/{source.id}/fork", {"from_step": 3})
    assert fork.status_code == 201 and fork.json()["run_id"] == f"{source.id}~2"
    bad = post(api, f"/api/runs/{source.id}/fork", {"from_step": 9})
    assert bad.status_code == 400 and "has no step 9" in bad.json()["error"]
    denied = post(api_for(alice), f"/api/runs/{source.id}/rerun")
    assert denied.status_code == 403 and denied.json()["code"] == "permission_denied"
    listed = api.get("/api/runs", {"tag": "order=a", "error_code": "driver_failed"})
    assert [r["run_id"] for r in listed.json()["results"]] == [source.id]
    assert api.get("/api/runs", {"since": "soon"}).status_code == 400


def test_the_api_counts_before_a_bulk_rerun_and_acts_on_the_confirmed_count(engine, ops):
    api = api_for(ops)
    for label in ("b1", "b2", "b3"):
        failed(engine, label)
    counted = post(api, "/api/bulk/rerun", {"workflow": "flow"})
    assert counted.json() == {"matched": 3, "done": [], "refused": [], "acted": False}
    assert Run.objects.count() == 3
    stale = post(api, "/api/bulk/rerun", {"workflow": "flow", "expect": 2})
    assert stale.status_code == 400 and "not the 2 confirmed" in stale.json()["error"]
    done = post(api, "/api/bulk/rerun", {"workflow": "flow", "expect": 3})
    assert done.status_code == 200 and done.json()["acted"] is True and len(done.json()["done"]) == 3


def test_the_api_pauses_lists_and_unpauses(engine, ops):
    api = api_for(ops)
    made = post(api, "/api/pauses", {"kind": "connector", "target": "acme", "reason": "API down"})
    assert made.status_code == 201, made.content
    run = engine.run("flow")
    listed = api.get("/api/pauses").json()["results"]
    assert [(p["target"], p["held_runs"]) for p in listed] == [("acme", [run.id])]
    assert post(api, "/api/pauses", {"kind": "connector", "target": "nope", "reason": "x"}).status_code == 400
    lifted = api.delete("/api/pauses/connector/acme")
    assert lifted.status_code == 200 and lifted.json()["active"] is False
    engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED


def test_the_admin_reruns_after_a_confirmation_page_and_forks_from_a_step(engine, ops):
    source = failed(engine, "adm")
    client = Client()
    client.force_login(ops)
    page = client.get(f"/admin/runs/run/{source.id}/change/").content.decode()
    assert "Rerun…" in page and "Fork from a step" in page
    ask = client.post("/admin/runs/run/", {"action": "rerun_selected", "_selected_action": [source.id]})
    assert ask.status_code == 200 and "1 failed run will be rerun" in ask.content.decode()
    assert "acme.mail.send" in ask.content.decode()  # the calls each makes again
    assert Run.objects.count() == 1  # only asked
    client.post("/admin/runs/run/", {"action": "rerun_selected", "_selected_action": [source.id],
                                     "confirmed": "yes"})
    assert Run.objects.filter(source_run=source.id).count() == 1
    steps = client.get(f"/admin/runs/run/{source.id}/fork/").content.decode()
    assert "Fork from step 3" in steps
    asked = client.post(f"/admin/runs/run/{source.id}/fork/", {"from_step": "3"})
    assert asked.status_code == 200 and "Yes, fork" in asked.content.decode()
    assert Run.objects.filter(source_run=source.id).count() == 1  # only asked
    forked = client.post(f"/admin/runs/run/{source.id}/fork/", {"from_step": "3", "confirmed": "yes"})
    assert forked.status_code == 302 and Run.objects.filter(source_run=source.id).count() == 2


def test_the_admin_pauses_with_a_reason_and_unpauses(engine, ops):
    client = Client()
    client.force_login(ops)
    refused = client.post("/admin/runs/pause/add/", {"kind": "connector", "target": "nope", "reason": "x"})
    assert refused.status_code == 200 and "the connectors are acme" in refused.content.decode()
    client.post("/admin/runs/pause/add/", {"kind": "connector", "target": "acme", "reason": "API down"})
    pause = Pause.objects.get()
    run = engine.run("flow")
    listing = client.get("/admin/runs/pause/").content.decode()
    assert "API down" in listing and run.id in listing
    client.post("/admin/runs/pause/", {"action": "unpause_selected", "_selected_action": [pause.pk]})
    pause.refresh_from_db()
    assert pause.active is False


def test_the_admin_run_list_finds_runs_by_tag_value_error_code_and_day(engine, ops):
    failed(engine, "1001")
    engine.run("flow", {"label": "2002"})
    client = Client()
    client.force_login(ops)

    def rows(**query: str) -> int:
        return client.get("/admin/runs/run/", query).content.decode().count('name="_selected_action"')

    assert (rows(), rows(q="1001"), rows(q="2002"), rows(q="3003")) == (2, 1, 1, 0)
    assert (rows(error_code="driver_failed"), rows(status="failed", q="2002")) == (1, 0)
    listing = client.get("/admin/runs/run/").content.decode()
    assert "error code" in listing and "driver_failed" in listing
