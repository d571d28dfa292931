"""`/api/` lists the API's endpoints from its own schema; `/api/docs/` serves Swagger UI from the
site's own static files (no CDN)."""
from __future__ import annotations

import pytest
from django.test import Client

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
