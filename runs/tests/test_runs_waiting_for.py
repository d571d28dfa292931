"""Finding runs by what they wait for: `GET /api/runs?waiting_for=` (with the other filters), a bad
kind refused naming the parameter, and the desk's runs list filtering the same way."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from pydantic import BaseModel

from runs import pausing
from runs.authoring import define_workflow
from runs.engine import pauses
from runs.models import Run, RunStatus, RunTag
from runs.seed import seed_person
from runs.selectors import WAITING_FOR, RunFilter, matching_runs
from runs.testing import make_user
from runs.tests.fixtures import GET
from runs.tests.test_api import client_for

pytestmark = pytest.mark.django_db


class Waits(BaseModel):
    kind: str
    order: int = 0


def _waits(ctx, input: Waits):
    ctx.tag(order=input.order)
    kind = input.kind
    if kind == "approval":
        ctx.approval("Look", approver="bob")
    elif kind == "message":
        ctx.wait_message("go")
    elif kind == "sleep":
        ctx.sleep(hours=1)
    else:
        ctx.acme.order.get({"order_id": "1"})
    return {}


waits = define_workflow(name="waits", input=Waits, uses=[GET, "approval", "wait_message", "sleep"], run=_waits)


@pytest.fixture
def olga():
    return make_user("olga", perms=["runs.view_any_run", "runs.operate_runs", "runs.pause"])


@pytest.fixture
def runs(engine_for, olga):
    pauses.forget()  # the engine keeps the pauses it read for a moment: not another test's
    engine = engine_for(waits)
    made = {kind: engine.run("waits", {"kind": kind, "order": n}, run_id=f"on-{kind}")
            for n, kind in enumerate(("approval", "message", "sleep"))}
    made["done"] = engine.run("waits", {"kind": "call"}, run_id="done")
    pausing.pause(kind="connector", target="acme", reason="the shop is down", by="olga")
    made["paused"] = engine.run("waits", {"kind": "call"}, run_id="on-paused")
    yield made
    pauses.forget()


def test_the_api_lists_the_runs_waiting_for_each_kind(olga, runs):
    assert runs["paused"].waiting_for == "paused acme" and runs["done"].status == RunStatus.FINISHED
    client = client_for(olga)

    def ids(query: str) -> list[str]:
        answer = client.get(f"/api/runs?{query}")
        assert answer.status_code == 200, answer.content
        return [run["run_id"] for run in answer.json()["results"]]

    for kind in ("approval", "message", "sleep", "paused"):
        assert ids(f"waiting_for={kind}") == [f"on-{kind}"], kind
    assert ids("waiting_for=retry") == [] and ids("waiting_for=in_doubt") == [] and ids("waiting_for=run") == []
    assert ids("waiting_for=approval&tag=order=0") == ["on-approval"]
    assert ids("waiting_for=approval&tag=order=1") == []
    assert ids("waiting_for=sleep&status=waiting&workflow=waits") == ["on-sleep"]


@pytest.mark.parametrize("kind", ["nap", "", "paused acme", "APPROVAL"])
def test_a_kind_the_runs_list_does_not_know_is_400_naming_waiting_for(olga, runs, kind):
    before = list(Run.objects.order_by("id").values_list("id", "status", "waiting_for"))
    answer = client_for(olga).get("/api/runs", {"waiting_for": kind})
    assert answer.status_code == 400, answer.content
    said = answer.json()
    assert said["code"] == "invalid_input" and [issue["path"] for issue in said["issues"]] == [["waiting_for"]]
    assert said["issues"][0]["message"].endswith("is not one of: " + ", ".join(WAITING_FOR))  # what to send instead
    assert list(Run.objects.order_by("id").values_list("id", "status", "waiting_for")) == before


def test_the_schema_documents_waiting_for_with_its_kinds(olga):
    schema = client_for(olga).get("/api/schema/?format=json").json()
    [parameter] = [p for p in schema["paths"]["/api/runs"]["get"]["parameters"] if p["name"] == "waiting_for"]
    assert parameter["schema"]["enum"] == list(WAITING_FOR)


def test_a_filter_on_a_kind_is_refused_by_the_selector_naming_the_field(olga):
    with pytest.raises(Exception) as refused:
        RunFilter.parse(waiting_for="nap")
    assert getattr(refused.value, "code", None) == "invalid_input"
    assert refused.value.data["issues"][0]["path"] == ["waiting_for"]  # type: ignore[attr-defined]
    assert list(matching_runs(viewer=None, where=RunFilter.parse(waiting_for="retry"))) == []


def test_the_desk_runs_list_filters_by_kind_and_finds_a_tag_typed_as_key_value(runs):
    root = Client()
    root.force_login(seed_person(username="root", superuser=True))

    def listed(query: str) -> set[str]:
        page = root.get(f"/admin/runs/run/?{query}")
        assert page.status_code == 200
        return {run.id for run in page.context["cl"].result_list}

    assert listed("waiting_for=message") == {"on-message"}
    assert listed("waiting_for=paused") == {"on-paused"}
    assert listed("q=order%3D1") == {"on-message"}
    assert listed("q=order%3D1+order%3D2") == set()  # every key=value must match
    RunTag.objects.create(run=runs["sleep"], key="customer", value="ada lovelace")
    assert listed("q=customer%3D%22ada+lovelace%22") == {"on-sleep"}  # a quoted value
    assert listed("q=on-sleep") == {"on-sleep"}  # a run id, as before
    assert listed("tag=order%3D2") == {"on-sleep"}
    refused = root.get("/admin/runs/run/?waiting_for=nap", follow=True).content.decode()
    assert "“nap” is not what a run waits for: one of approval, message, sleep, run, in_doubt, paused, retry" in refused
    assert "0 runs" in refused


def test_the_filtered_runs_list_costs_the_same_queries_for_5_and_for_50_rows(engine_for, olga):
    engine = engine_for(waits)
    root = Client()
    root.force_login(seed_person(username="root", superuser=True))
    urls = ("/admin/runs/run/?waiting_for=approval", "/admin/runs/run/?q=order%3D7", "/admin/runs/run/?tag=order%3D7",
            "/api/runs?waiting_for=approval&tag=order=7")
    api = client_for(olga)
    counts = {}
    for rows, more in ((5, 5), (50, 45)):
        for _ in range(more):
            engine.run("waits", {"kind": "approval", "order": 7})
        counts[rows] = [queries(api if url.startswith("/api/") else root, url) for url in urls]
        assert len(root.get(urls[0]).context["cl"].result_list) == rows
    assert counts[5] == counts[50], counts


def queries(client, url: str) -> int:
    client.get(url)  # once first: per-process caches (content types, the config) fill on the first view
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured.captured_queries)
