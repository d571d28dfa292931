"""Sandbox runs over the API: `POST /api/sandbox-runs` starts one from a scenario, every run in the
API says whether it is a sandbox (`sandbox`), `GET /api/runs?sandbox=` filters, and a run's page in
the API shows its scenario's checks once it has ended. Refusals name the field and write nothing."""
from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from runs import services
from runs.engine.drain import drain
from runs.models import Run
from runs.sandbox.models import SandboxRun
from runs.seed import seed_person

pytestmark = pytest.mark.django_db

APPROVES = "finance approves a refund"


def api(username: str) -> APIClient:
    client = APIClient()
    user = get_user_model().objects.get(username=username)
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def post(client: APIClient, body: Any) -> Any:
    return client.post("/api/sandbox-runs", data=json.dumps(body), content_type="application/json")


def test_the_api_starts_a_sandbox_run_marks_it_and_shows_its_checks_once_ended(company):
    answer = post(api("alice"), {"scenario": APPROVES, "workflow": "refund"})
    assert answer.status_code == 201, answer.json()
    body = answer.json()
    run_id = body["run_id"]
    assert run_id.startswith("sandbox-refund-") and body["workflow"] == "refund"
    assert body["input"] == {"order_id": "1001", "amount_cents": 1500, "reason": "damaged in transit"}
    assert body["sandbox"] == {"scenario": APPROVES, "file": "scenarios/refund.feature", "checks": None,
                               "passed": None, "failed": None}
    drain(company)
    inbox = api("finance-lead").get("/api/approvals").json()["results"]
    assert [(a["run_id"], a["sandbox"]) for a in inbox] == [(run_id, True)]  # marked in the inbox
    # Decided like any other approval, by its approver, over the API.
    decided = api("finance-lead").post(f"/api/runs/{run_id}/approvals",
                                       data=json.dumps({"decision": "approve", "note": "fine"}),
                                       content_type="application/json")
    assert decided.status_code in (200, 202), decided.json()
    drain(company)
    shown = api("alice").get(f"/api/runs/{run_id}").json()["run"]
    assert shown["status"] == "finished"
    sandbox = shown["sandbox"]
    assert (sandbox["passed"], sandbox["failed"]) == (9, 0), sandbox["checks"]
    assert sandbox["checks"][0] == {"step": "Then order 1001 was refunded 1500", "line": 17, "ok": True,
                                    "detail": ""}
    # A run on real drivers says null; the list filters either way.
    plain = services.start(workflow="refund", input={"order_id": "1001", "amount_cents": 100}, started_by="alice")
    listed = api("alice").get("/api/runs").json()["results"]
    assert {r["run_id"]: r["sandbox"] is not None for r in listed} == {run_id: True, plain.id: False}
    only = api("alice").get("/api/runs?sandbox=true").json()
    assert [r["run_id"] for r in only["results"]] == [run_id] and only["count"] == 1
    none = api("alice").get("/api/runs?sandbox=false").json()
    assert [r["run_id"] for r in none["results"]] == [plain.id]


def test_a_failing_check_is_shown_with_why(company):
    run_id = post(api("alice"), {"scenario": "finance rejects a refund"}).json()["run_id"]
    drain(company)
    api("finance-lead").post(f"/api/runs/{run_id}/approvals", data=json.dumps({"decision": "approve"}),
                             content_type="application/json")
    drain(company)
    sandbox = api("alice").get(f"/api/runs/{run_id}").json()["run"]["sandbox"]
    assert sandbox["failed"] == 6 and sandbox["passed"] == 0
    first = sandbox["checks"][0]
    assert first["step"] == 'Then the run fails with "approval_rejected"' and not first["ok"]
    assert "The run finished" in first["detail"]


@pytest.mark.parametrize(("body", "field", "said"), [
    ({}, "scenario", "required"),
    ({"scenario": "nope"}, "scenario", 'No scenario "nope" of the company'),
    ({"scenario": "nope", "workflow": "refund"}, "scenario",
     'No scenario "nope" of workflow refund. `manage.py sandbox --workflow refund` (or '
     '`GET /api/scenarios?workflow=refund`) lists all'),
    ({"scenario": "finance aproves a refund"}, "scenario",
     'Did you mean "finance approves a refund", '),
    ({"scenario": APPROVES, "workflow": "ship"}, "scenario", "runs workflow refund, not ship"),
    ({"scenario": APPROVES, "workflow": "nope"}, "workflow", "No workflow 'nope'"),
    ({"scenario": APPROVES, "extra": 1}, "extra", ""),
])
def test_a_bad_start_is_refused_naming_the_field_and_writes_nothing(company, body, field, said):
    answer = post(api("alice"), body)
    assert answer.status_code == 400, answer.json()
    error = answer.json()
    assert error["code"] == "invalid_input"
    assert [i["path"][0] for i in error["issues"]] == [field], error
    assert said in error["error"] + json.dumps(error["issues"])
    assert not Run.objects.exists() and not SandboxRun.objects.exists()


def test_someone_who_may_not_start_the_workflow_is_refused_403(company):
    seed_person(username="walk-in", groups=("visitors",))
    answer = post(api("walk-in"), {"scenario": APPROVES})
    assert answer.status_code == 403 and answer.json()["code"] == "permission_denied"
    assert not Run.objects.exists()


def test_the_api_refuses_a_body_that_is_not_json(company):
    answer = api("alice").post("/api/sandbox-runs", data="scenario=x", content_type="text/plain")
    assert answer.status_code == 415
