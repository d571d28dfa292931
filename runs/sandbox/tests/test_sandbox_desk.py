"""Sandbox runs on the desk (Django's test client; the Chromium test clicks through the same):
the "Try in sandbox" page lists a workflow's scenarios and starts one, the runs list marks and
filters sandbox runs, the run page shows the scenario and its checks, the inbox marks its approvals."""
from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from runs import services
from runs.engine.drain import drain
from runs.models import Run
from runs.sandbox.models import SandboxRun
from runs.sandbox.scenarios import reader

pytestmark = pytest.mark.django_db

APPROVES = "finance approves a refund"


def desk(username: str) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client


def test_the_sandbox_page_lists_the_workflows_scenarios_and_starts_the_one_chosen(company):
    alice = desk("alice")
    # Reached from the workflow's catalog page, its start form and the runs list.
    for page in (reverse("admin:catalog_workflow", args=["refund"]), "/admin/runs/run/start/?workflow=refund"):
        assert 'href="/admin/runs/run/sandbox/?workflow=refund"' in alice.get(page).content.decode(), page
    assert 'href="/admin/runs/run/sandbox/"' in alice.get("/admin/runs/run/").content.decode()
    index = alice.get("/admin/runs/run/sandbox/").content.decode()
    assert 'href="/admin/runs/run/sandbox/?workflow=refund"' in index
    page = alice.get("/admin/runs/run/sandbox/?workflow=refund").content.decode()
    names = re.findall(r'name="_scenario" value="([^"]+)"', page)
    # Every scenario of the company that starts refund, once each (refund.feature's and budget.feature's).
    assert APPROVES in names and "finance rejects a refund" in names
    assert len(names) == len(set(names)) == len(reader().of_workflow(company, "refund"))
    # One that seeds the day's spend can never start here: its choice is disabled, with why, before any try.
    budget = "the refund that would pass the budget is held for finance"
    [choice] = re.findall(rf'<input type="radio" name="_scenario" value="{budget}"[^>]*>', page)
    assert choice.endswith(" disabled>")
    assert ('<p class="help sanoma-scenario-problem">Cannot start: The scenario&#x27;s step &#x27;Given '
            "shop.order.refund has spent 90000 today&#x27; (scenarios/budget.feature:38) cannot seed a sandbox run"
            ) in page
    cannot = [c for c in reader().of_workflow(company, "refund") if c.problem]
    assert {c.file for c in cannot} == {"scenarios/budget.feature"}
    assert len(re.findall(r" disabled>", page)) == len(re.findall("sanoma-scenario-problem", page)) == len(cannot)
    none = alice.post("/admin/runs/run/sandbox/?workflow=refund", {"_workflow": "refund"})
    assert none.status_code == 400 and "Choose a scenario" in none.content.decode()
    started = alice.post("/admin/runs/run/sandbox/?workflow=refund", {"_workflow": "refund", "_scenario": APPROVES})
    run = Run.objects.get()
    assert started.status_code == 302 and started["Location"] == f"/admin/runs/run/{run.id}/change/"
    assert SandboxRun.objects.get(pk=run.id).scenario == APPROVES
    shown = alice.get(started["Location"]).content.decode()
    assert 'id="sandbox"' in shown and "The scenario's checks are evaluated when the run ends." in shown


def test_a_refused_start_says_why_on_the_page_and_starts_nothing(company):
    from runs.seed import seed_person

    seed_person(username="olga", staff=True, perms=("runs.view_any_run",))
    page = desk("olga").post("/admin/runs/run/sandbox/?workflow=refund", {"_workflow": "refund",
                                                                         "_scenario": APPROVES})
    said = page.content.decode()
    assert page.status_code == 403
    assert ("olga may not start refund, so may not start it in the sandbox either: a sandbox run is started as "
            "you, with the same right as a real run (runs.start_workflow) (permission_denied)") in said
    assert 'id="sandbox-start"' not in said and 'id="sandbox-may-not-start"' in said
    assert not Run.objects.exists()


def test_the_runs_list_marks_and_filters_sandbox_runs_and_the_inbox_marks_their_approvals(company_on_fakes):
    company = company_on_fakes
    from runs.sandbox.services import start_sandbox

    sandbox = start_sandbox(scenario=APPROVES, started_by="alice")
    plain = services.start(workflow="refund", input={"order_id": "1001", "amount_cents": 1500}, started_by="alice")
    drain(company)
    assert Run.objects.get(pk=plain.id).waiting_for == "approval"
    alice = desk("alice")

    def rows(url: str) -> dict[str, bool]:
        listed = alice.get(url).content.decode()
        shown = {}
        for row in re.findall(r"<tr>.*?</tr>", listed, re.DOTALL):
            run_id = re.search(r'<th class="field-id"><a href="[^"]*">([^<]+)</a></th>', row)
            if run_id is not None:
                cell = re.search(r'<td class="field-sandbox_badge">(.*?)</td>', row, re.DOTALL)
                assert cell is not None, row
                shown[run_id.group(1)] = "sanoma-sandbox-badge" in cell.group(1)
        return shown

    assert rows("/admin/runs/run/") == {sandbox.id: True, plain.id: False}
    assert rows("/admin/runs/run/?sandbox=yes") == {sandbox.id: True}
    assert rows("/admin/runs/run/?sandbox=no") == {plain.id: False}
    inbox = desk("finance-lead").get("/admin/runs/approval/").content.decode()
    [body] = re.findall(r'<tbody>(.*?)</tbody>', inbox, re.DOTALL)
    marked = {}
    for row in re.findall(r"<tr>.*?</tr>", body, re.DOTALL):
        link = re.search(r'href="/admin/runs/run/([^/]+)/change/"', row)
        assert link is not None, row
        marked[link.group(1)] = "sanoma-sandbox-badge" in row
    assert marked == {sandbox.id: True, plain.id: False}


def test_the_run_page_shows_the_checks_once_the_run_ended(company):
    from runs.approvals.services import decide
    from runs.sandbox.services import start_sandbox

    run = start_sandbox(scenario=APPROVES, started_by="alice")
    drain(company)
    decide(run_id=run.id, decision="approve", by="finance-lead", timeout=0)
    drain(company)
    page = desk("alice").get(f"/admin/runs/run/{run.id}/change/").content.decode()
    assert "The scenario's checks: 8 passed, 1 failed." in page  # no note "fine" was given
    said = ('expected at least one &quot;approval.decided&quot; record(s) with {&quot;by&quot;: '
            '&quot;finance-lead&quot;, &quot;note&quot;: &quot;fine&quot;}; found 0.')
    assert said in page
    assert page.count('data-ok="true"') == 8 and page.count('data-ok="false"') == 1
    # `manage.py show` says the same, the failing check's reason under it.
    import io

    from django.core.management import call_command

    out = io.StringIO()
    call_command("show", run.id, stdout=out)
    lines = out.getvalue().splitlines()
    failing = next(i for i, line in enumerate(lines) if line.startswith("  FAIL  "))
    assert lines[failing + 1] == ('        expected at least one "approval.decided" record(s) with {"by": '
                                  '"finance-lead", "note": "fine"}; found 0.')
    assert SandboxRun.objects.get(pk=run.id).checks is not None  # evaluated once, kept
