"""What a malformed start gets: the content type, the body, the caller, and what the body names.

A body that is not JSON is 415; an empty or broken one 400; an unauthenticated caller the API's
`not_authenticated` (401, the project's sign-in being a token or a session rather than a header naming
an actor); `workflow` and `scenario` together 400 "Send a workflow or a scenario, not both"; an unknown
workflow 404 `invalid_input` with an issue at `workflow`. None of them leaves a run behind."""
from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from runs.models import LedgerRecord, Run
from runs.tests.test_api import client_for, nap_flow


@pytest.fixture
def api(engine_for, alice) -> APIClient:
    engine_for(nap_flow)
    return client_for(alice)


def start(client: APIClient, body: str, content_type: str = "application/json"):
    return client.generic("POST", "/api/runs", body, content_type=content_type)


def assert_nothing_started() -> None:
    assert Run.objects.count() == 0 and LedgerRecord.objects.count() == 0


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"])
def test_a_body_that_is_not_json_is_415(api, content_type):
    answer = start(api, json.dumps({"workflow": "nap"}), content_type)
    assert answer.status_code == 415
    assert answer.json() == {"error": "Send the body as JSON, with Content-Type: application/json",
                             "code": "unsupported_media_type"}
    assert_nothing_started()


def test_a_body_without_a_content_type_is_415(api):
    answer = api.generic("POST", "/api/runs", json.dumps({"workflow": "nap"}), content_type="")
    assert answer.status_code == 415 and answer.json()["code"] == "unsupported_media_type"
    assert_nothing_started()


@pytest.mark.parametrize(("body", "path", "code"), [
    ("", [], "required"),
    ("{", [], "parse_error"),
    ('{"workflow": "nap",}', [], "parse_error"),
    ("[]", [], "invalid_type"),
    ('"nap"', [], "invalid_type"),
    ("{}", ["workflow"], "required"),
])
def test_an_empty_or_invalid_body_is_400_naming_where(api, body, path, code):
    answer = start(api, body)
    assert answer.status_code == 400, answer.content
    said = answer.json()
    assert said["code"] == "invalid_input"
    assert [(i["path"], i["code"]) for i in said["issues"]] == [(path, code)]
    assert_nothing_started()


def test_a_caller_who_is_not_signed_in_gets_not_authenticated(engine_for):
    engine_for(nap_flow)
    answer = start(APIClient(), json.dumps({"workflow": "nap"}))
    assert answer.status_code == 401
    assert answer.json() == {"error": "Authentication credentials were not provided.", "code": "not_authenticated"}
    assert answer["WWW-Authenticate"] == "Token"
    assert_nothing_started()


def test_a_workflow_and_a_scenario_together_are_refused(api):
    answer = start(api, json.dumps({"workflow": "nap", "scenario": "scenarios/nap.feature:3"}))
    assert answer.status_code == 400
    said = answer.json()
    assert said["error"] == "Send a workflow or a scenario, not both"
    assert said["code"] == "invalid_input" and [i["path"] for i in said["issues"]] == [["scenario"]]
    assert_nothing_started()


def test_a_scenario_alone_is_refused_saying_what_to_send_instead(api):
    answer = start(api, json.dumps({"scenario": "scenarios/nap.feature:3"}))
    assert answer.status_code == 400
    said = answer.json()
    assert said["error"].startswith("A run cannot be started from a scenario over the API")
    assert "GET /api/scenarios" in said["error"]
    assert said["issues"] == [{"path": ["scenario"], "message": "not offered over the API", "code": "unsupported"}]
    assert_nothing_started()


def test_an_unknown_workflow_is_404_invalid_input_at_workflow(api):
    answer = start(api, json.dumps({"workflow": "nope", "input": {}}))
    assert answer.status_code == 404
    said = answer.json()
    assert said["code"] == "invalid_input"
    assert [(i["path"], i["code"]) for i in said["issues"]] == [(["workflow"], "not_found")]
    assert "nope" in said["error"]
    assert_nothing_started()
