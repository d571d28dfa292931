"""Declared state told truthfully on every surface but the browser's (the journeys in a browser are
`test_desk_journeys_state.py`): an apply that did not make every change of its plan fails with
`apply_incomplete` and counts why (the run, the API, `manage.py apply`'s exit status); the plan
says how many changes the policy will refuse, and an apply it refuses whole is not started; a
credential's status is set, missing, not set or invalid, as it is; a change's page shows paths
relative to the config root and stays live while its run goes on; the sidebar says Resources."""
from __future__ import annotations

import io
import json
import subprocess

import pytest
from django.contrib.admin.utils import quote
from django.core.management import CommandError, call_command
from django.test import Client, override_settings
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from changes import services
from changes.credentials import runtime, selectors
from changes.credentials.models import Credential
from changes.credentials.tests.credentials_company.harness import TEST_KEY
from changes.lifecycle.services import open_change
from changes.tests.conftest import COMPANY, staff
from changes.tests.test_drift_apply import DenySome
from company.vendors.shop import shop
from connectors.errors import SanomaError
from runs.approvals.services import decide
from runs.config.registry import set_config
from runs.config.resolution import SanomaConfig, resolve_config
from runs.models import LedgerKind, LedgerRecord, Run, RunStatus
from runs.services import cancel
from runs.testing import make_user, resolve_on_fakes
from runs.tests.fixtures import acme as acme_connector

# Two changes the policy denies ops: the tote, and sam (whose role is then skipped).
TWO_DENIED = {("shop.product.create", "product/tote"): "no bags this year",
              ("sanoma.person.create", "person/sam"): "sam is not hired yet"}


def api(username: str) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=make_user(username))
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def apply_run(config, by: str = "ops", *, decide_as: str = "sec", reject: int = 0) -> Run:
    """An apply run to its end, `decide_as` deciding each held change as it waits (rejecting the
    first `reject` of them)."""
    run = services.start("apply", by=by, config=config)
    decided = 0
    while True:
        followed = services.follow(run, here=True, config=config, timeout=60)
        if followed.ended:
            return followed.run
        for waiting in followed.waiting:
            decided += 1
            decide(run_id=run.id, decision="reject" if decided <= reject else "approve", by=decide_as,
                   approval_id=waiting["approval"], timeout=0)


# ---- an apply's outcome ------------------------------------------------------------------------


def test_an_apply_that_made_every_change_finishes(company):
    company.policy = DenySome({})  # everything allowed: nothing held, nothing denied
    run = apply_run(company)
    assert run.status == RunStatus.FINISHED and run.error is None
    assert services.report(run)["summary"]["done"] == 19


def test_an_apply_with_denied_changes_fails_apply_incomplete_counting_why(company):
    company.policy = DenySome(TWO_DENIED)
    run = apply_run(company)
    assert run.status == RunStatus.FAILED  # not "finished": it did not do what it was for
    error = run.error or {}
    assert error["code"] == "apply_incomplete"
    assert error["message"] == "3 of 19 changes not made (2 denied, 1 skipped); 16 applied"
    counts = {k: error["data"][k] for k in ("applied", "denied", "rejected", "failed", "skipped", "planned")}
    assert counts == {"applied": 16, "denied": 2, "rejected": 0, "failed": 0, "skipped": 1, "planned": 19}
    # What it did is still there to read: the report, in the error (a failed run has no output).
    report = services.report(run)
    assert {c["name"]: c["status"] for c in report["changes"]}["sam_admin"] == "skipped"
    assert report == error["data"]["report"]
    # The ledger ends with run.failed naming the code, and the API says the same.
    last = LedgerRecord.objects.filter(run_id=run.id).order_by("-seq").first()
    assert last is not None and last.kind == LedgerKind.RUN_FAILED
    assert last.body["error"]["code"] == "apply_incomplete"
    answer = api("ops").get(f"/api/runs/{run.id}").json()["run"]
    assert answer["status"] == "failed" and answer["error"]["code"] == "apply_incomplete"
    assert answer["error"]["data"]["denied"] == 2 and answer["error"]["data"]["applied"] == 16


def test_an_apply_in_which_every_change_was_denied_fails(company):
    run = apply_run(company, by="intern")  # the company's policy: not staff, so no writes
    error = run.error or {}
    assert run.status == RunStatus.FAILED and error["code"] == "apply_incomplete"
    # Each change denied, or skipped because what it refers to was denied (a person's role, ...).
    assert (error["data"]["applied"], error["data"]["denied"], error["data"]["skipped"]) == (0, 8, 11)
    assert error["message"] == "19 of 19 changes not made (8 denied, 11 skipped); 0 applied"


def test_a_change_its_approver_rejected_counts_as_rejected(company):
    run = apply_run(company, reject=1)  # security rejects the first change held for it, approves the rest
    error = run.error or {}
    assert run.status == RunStatus.FAILED and error["code"] == "apply_incomplete"
    assert error["data"]["rejected"] == 1 and error["data"]["denied"] == 0
    rejected = [c for c in services.report(run)["changes"] if (c.get("error") or {}).get("code") == "approval_rejected"]
    assert len(rejected) == 1


# ---- the plan says what the policy will refuse --------------------------------------------------


def test_the_plan_counts_the_changes_the_policy_will_refuse(company):
    company.policy = DenySome(TWO_DENIED)
    services.drift(by="ops", here=True, config=company)
    plan = api("ops").get("/api/resources/plan").json()
    assert (plan["refused"], plan["all_refused"], len(plan["changes"])) == (2, False, 19)
    assert sorted(c["name"] for c in plan["changes"] if c["refused"]) == ["sam", "tote"]
    assert services.refused_text(plan, to="you") == \
        "2 of 19 changes will be refused: the policy denies them to you (marked denied below)"
    company.policy = resolve_config(SanomaConfig(app_name="acme", connectors=[shop], root=COMPANY),
                                    fakes="instance").policy
    services.drift(by="intern", here=True, config=company)
    plan = api("intern").get("/api/resources/plan").json()
    assert (plan["refused"], plan["all_refused"]) == (19, True)
    # An apply the plan shows refused whole is not started.
    with pytest.raises(SanomaError) as refused:
        services.check_apply(by="intern", config=company)
    assert refused.value.code == "policy_denied"
    assert "The policy denies every change of this plan to intern" in refused.value.message
    services.check_apply(by="ops", config=company)  # ops may: most of it goes through


def test_manage_py_apply_exits_1_naming_the_counts_and_starts_nothing_the_policy_refuses_whole(company):
    company.policy = DenySome(TWO_DENIED)
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("apply", "--as", "ops", "--here", "--yes", stdout=out, stderr=err)
    assert exited.value.code == 1
    lines = out.getvalue().splitlines()
    assert "2 of 19 changes will be refused: the policy denies them to ops" in out.getvalue()
    assert lines[-1] == "16 applied, 2 denied, 0 rejected, 0 failed, 1 skipped"
    assert "failed with apply_incomplete: 3 of 19 changes not made (2 denied, 1 skipped)" in err.getvalue()

    company.policy = resolve_config(SanomaConfig(app_name="acme", connectors=[shop], root=COMPANY),
                                    fakes="instance").policy
    applies = Run.objects.filter(workflow="apply").count()
    with pytest.raises(CommandError, match="Nothing applied: the policy denies every change of this plan to intern"):
        call_command("apply", "--as", "intern", "--here", "--yes", stdout=io.StringIO())
    assert Run.objects.filter(workflow="apply").count() == applies


# ---- credentials: the truth about each --------------------------------------------------------


def line_of(name: str) -> str:
    out = io.StringIO()
    call_command("credentials", "list", stdout=out)
    return next(line for line in out.getvalue().splitlines() if f": {name} " in line)


def test_a_secret_a_data_file_names_is_missing_until_set_and_an_optional_one_is_not_set(
        company, monkeypatch, settings):
    monkeypatch.delenv("SHOP_WEBHOOK_SECRET")
    statuses = {s.name: s for s in selectors.credential_statuses()}
    hook = statuses["SHOP_WEBHOOK_SECRET"]
    assert (hook.status, hook.source) == ("missing", "none")  # not "set / default": it has no value
    assert hook.needed_by == ("resources/webhooks.py:5 (orders_hook)",)
    assert hook.problem == "a data file needs it: resources/webhooks.py:5 (orders_hook)"
    assert (statuses["GITHUB_TOKEN"].status, statuses["GITHUB_TOKEN"].source) == ("not_set", "none")
    assert (statuses["SHOP_API_URL"].status, statuses["SHOP_API_URL"].source) == ("missing", "none")
    make_user("auditor", perms=["credentials.view_credential"])
    listed = api("auditor").get("/api/credentials").json()["results"]
    row = next(r for r in listed if r["name"] == "SHOP_WEBHOOK_SECRET")
    assert (row["status"], row["problem"], row["needed_by"]) == (
        "missing", "a data file needs it: resources/webhooks.py:5 (orders_hook)",
        ["resources/webhooks.py:5 (orders_hook)"])
    assert line_of("SHOP_WEBHOOK_SECRET") == ("shop: SHOP_WEBHOOK_SECRET missing (none): a data file needs it: "
                                              "resources/webhooks.py:5 (orders_hook)")
    assert line_of("GITHUB_TOKEN") == "sanoma: GITHUB_TOKEN not set (none): optional, the driver gets no value"
    # What the status foretold, apply meets.
    company.policy = DenySome({})
    run = apply_run(company)
    failed = next(c for c in services.report(run)["changes"] if c["type"] == "shop.webhook")
    assert "SHOP_WEBHOOK_SECRET is missing" in failed["error"]["message"]

    # Stored: set. Stored with a key the site no longer holds: invalid, saying so.
    settings.SANOMA_SECRETS_KEY = [TEST_KEY]
    runtime.invalidate()
    monkeypatch.setattr("sys.stdin", io.StringIO("whsec-stored-0123456789abc\n"))
    call_command("credentials", "set", "SHOP_WEBHOOK_SECRET", stdout=io.StringIO())
    assert line_of("SHOP_WEBHOOK_SECRET") == "shop: SHOP_WEBHOOK_SECRET set (stored)"
    settings.SANOMA_SECRETS_KEY = ["Yl1yDw3QF3sbtGmlH3oW8lG0yNqWFp5sXb0vqQm2G2c="]
    runtime.invalidate()
    hook = next(s for s in selectors.credential_statuses() if s.name == "SHOP_WEBHOOK_SECRET")
    assert (hook.status, hook.source) == ("invalid", "stored")
    assert hook.problem is not None and hook.problem.startswith("stored, but")
    # A stored value its connector's check refuses: invalid too (the shop wants 16 characters).
    Credential.objects.all().delete()
    monkeypatch.setenv("SHOP_WEBHOOK_SECRET", "short")
    hook = next(s for s in selectors.credential_statuses() if s.name == "SHOP_WEBHOOK_SECRET")
    assert (hook.status, hook.source) == ("invalid", "environment")
    assert "16 characters" in (hook.problem or "")


def test_the_worker_still_needs_only_what_its_drivers_require(company, monkeypatch):
    # Not set (optional) is no reason to refuse to start; missing and invalid are.
    monkeypatch.delenv("SHOP_WEBHOOK_SECRET")
    assert runtime.startup_check([shop]) == [
        "shop: SHOP_API_URL is missing (the shop's API base URL)",
        "shop: SHOP_API_KEY is missing (an API key with order and staff scopes)"]


# ---- the desk's words and paths -----------------------------------------------------------------


def test_the_sidebar_calls_the_resources_page_resources(company):
    client = Client()
    client.force_login(make_user("ops"))
    home = client.get("/admin/").content.decode()
    assert '<a href="/admin/changes/driftverdict/">Resources</a>' in home
    assert "Drift verdicts" not in home


@pytest.fixture
def gitco_site(tmp_path):
    """A config whose root sits beside its repository (as the demo's does), no worker running."""
    root = tmp_path / "site"
    root.mkdir()
    set_config(resolve_on_fakes(SanomaConfig(connectors=[acme_connector], workflows=[], root=root)))
    repo = tmp_path / "company.git"
    subprocess.run(["git", "init", "--bare", "--quiet", str(repo)], check=True)
    work = tmp_path / "work"  # one commit on main and a branch off it, as a person pushes them
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "--quiet", "-b", "main", str(work)], check=True)
    (work / "README.md").write_text("company\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "--quiet", "-m", "start"], check=True)
    subprocess.run([*git, "push", "--quiet", str(repo), "main", "main:raise-mug"], check=True)
    with override_settings(SANOMA_REPO_URL=str(repo)):
        yield repo
    set_config(None)


def test_a_change_page_shows_paths_relative_to_the_config_root_and_is_live_until_its_run_ends(gitco_site, db):
    alice = staff("alice", perms=["runs.start_workflow"])
    run = open_change(branch="raise-mug", title="Mug to 16.00", by="alice")
    # What a failed check's problem may say: a path in the checks' own tree, and in the live root.
    root = gitco_site.parent / "site"
    from changes.lifecycle.models import ChangeRun

    ChangeRun.objects.filter(pk=run.id).update(checks={"ok": False, "checks": [{
        "name": "config", "ok": False, "skipped": "", "summary": "1 problem(s)", "problems": [{
            "file": "workflows/x.py", "line": 2, "column": 0,
            "message": f'File "/tmp/sanoma-checks-k2j4/site/workflows/x.py", line 2; see {root}/README.md'}]}]})
    client = Client()
    client.force_login(alice)
    url = f"/admin/lifecycle/changerun/{quote(run.id)}/change/"
    page = client.get(url)
    text = page.content.decode()
    assert "<tr><th>repository</th><td>../company.git</td></tr>" in text
    assert "File &quot;workflows/x.py&quot;, line 2; see README.md" in text
    assert str(gitco_site.parent) not in text and "sanoma-checks-" not in text
    assert page.context["live"] == 3  # its run is queued: the page reads itself again every 3 s
    assert "X-Sanoma-Live" in text  # the desk's live script is on the page
    cancel(run_id=run.id, by="alice", reason="not needed")
    assert Run.objects.get(pk=run.id).ended
    assert client.get(url).context["live"] is None


def test_the_resources_page_is_live_while_a_drift_or_apply_runs(company):
    client = Client()
    client.force_login(make_user("ops"))
    assert client.get("/admin/changes/driftverdict/").context["live"] is None  # nothing runs
    run = services.start("drift", by="ops", config=company)
    page = client.get("/admin/changes/driftverdict/")
    assert page.context["live"] == 3 and f"Drift run <a href=\"/admin/runs/run/{run.id}/change/\">" in \
        page.content.decode()
    services.follow(run, here=True, config=company)
    assert client.get("/admin/changes/driftverdict/").context["live"] is None


def test_the_resources_page_shows_an_incomplete_apply_in_red_with_its_counts(company):
    company.policy = DenySome(TWO_DENIED)
    services.drift(by="ops", here=True, config=company)
    run = apply_run(company)
    client = Client()
    client.force_login(make_user("ops"))
    text = client.get("/admin/changes/driftverdict/").content.decode()
    assert f'Latest apply: <a href="/admin/runs/run/{run.id}/change/">{run.id}</a>' in text
    assert '<span class="sanoma-outcome-bad" id="apply-incomplete">incomplete, ' in text
    assert "16 of 19 changes applied; not made: 2 denied, 1 skipped</span>" in text
    assert "This plan and the drift above are from before the latest apply" in text
    # The drift's moment in the desk's one format (not Django's "Dec. 3, 2026, 5:16 p.m.").
    assert "Latest drift: " in text and " UTC (" in text and "p.m." not in text and "a.m." not in text


def test_a_json_listing_keeps_every_field(company, monkeypatch):
    monkeypatch.delenv("SHOP_WEBHOOK_SECRET")
    out = io.StringIO()
    call_command("credentials", "list", "--json", stdout=out)
    hook = next(r for r in json.loads(out.getvalue()) if r["name"] == "SHOP_WEBHOOK_SECRET")
    assert hook == {"connector": "shop", "name": "SHOP_WEBHOOK_SECRET", "description": hook["description"],
                    "status": "missing", "problem": "a data file needs it: resources/webhooks.py:5 (orders_hook)",
                    "source": "none", "needed_by": ["resources/webhooks.py:5 (orders_hook)"],
                    "used_by": ["shop"], "descriptions": hook["descriptions"]}
