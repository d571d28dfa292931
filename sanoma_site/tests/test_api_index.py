"""`/api/` lists the API's endpoints from its own schema; `/api/docs/` serves Swagger UI from the
site's own static files (no CDN)."""
from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from runs.testing import make_user

pytestmark = pytest.mark.django_db


def test_the_api_index_lists_every_endpoint_with_its_methods():
    answer = Client().get("/api/")
    assert answer.status_code == 200
    body = answer.json()
    assert (body["schema"], body["docs"]) == ("/api/schema/", "/api/docs/")
    paths = {e["path"]: e["methods"] for e in body["endpoints"]}
    assert paths["/api/runs"]["POST"] == "Start a run"
    assert "GET" in paths["/api/runs/{run_id}"] and "POST" in paths["/api/runs/{run_id}/fork"]
    assert "/api/collections" in paths and "/api/pauses" in paths


def test_the_docs_page_serves_swagger_ui_without_a_cdn():
    page = Client().get("/api/docs/").content.decode()
    assert "swagger-ui" in page.lower() and "/static/drf_spectacular_sidecar/" in page
    assert "cdn.jsdelivr" not in page and "unpkg.com" not in page


def test_the_scenarios_are_listed_with_file_line_and_the_workflow_each_runs():
    client = APIClient()
    client.force_authenticate(make_user("reader"))
    answer = client.get("/api/scenarios", {"limit": "500"})
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["count"] == len(body["results"]) >= 20 and body["next"] is None
    by_place = {(s["file"], s["line"]): s for s in body["results"]}
    shipped = by_place[("scenarios/await_shipment.feature", 10)]
    assert shipped["name"] == "the warehouse says the order shipped"
    assert (shipped["workflow"], shipped["problem"]) == ("await-shipment", None)
    # each entry is a readable scenario with its workflow, or a problem placed at its file and line
    assert all(s["problem"] is not None for s in body["results"] if s["workflow"] is None)
    # a readable one no sandbox run can be seeded from says why up front, in the words a start refuses with
    budget = by_place[("scenarios/budget.feature", 37)]
    assert (budget["workflow"], budget["problem"]) == ("refund", (
        "The scenario's step 'Given shop.order.refund has spent 90000 today' (scenarios/budget.feature:38) "
        "cannot seed a sandbox run: the spend it seeds would count as the company's real shop.order.refund spend "
        "today"))
    seedable = [s for s in body["results"] if s["workflow"] and s["file"] != "scenarios/budget.feature"]
    assert seedable and all(s["problem"] is None for s in seedable)
    assert all(s["file"] and s["line"] for s in body["results"])
    only = client.get("/api/scenarios", {"workflow": "await-shipment", "limit": "500"}).json()
    assert only["results"] == [s for s in body["results"] if s["workflow"] == "await-shipment"]
    assert len(only["results"]) == 3
    assert client.get("/api/scenarios", {"limit": "0"}).status_code == 400
    assert client.get("/api/scenarios", {"workflw": "refund"}).json()["issues"][0]["path"] == ["workflw"]
    assert APIClient().get("/api/scenarios").status_code == 401


def test_the_index_lists_the_scenarios_endpoint():
    paths = {e["path"] for e in Client().get("/api/").json()["endpoints"]}
    assert {"/api/scenarios", "/api/config", "/api/runs/{run_id}/ledger"} <= paths
