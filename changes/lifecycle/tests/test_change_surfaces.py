"""Changes over the API (`/api/changes`, the GitHub webhook) and in the admin (the changes list, the
*Open a change* form, a change's page).

Each change is opened with `open_change` (or through the surface under test) against a real bare
git repository in the test's folder; no worker runs, so its run stays queued and what a surface
does to it is what the test reads: the rows opened, the messages sent.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.test import Client, override_settings
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from changes.lifecycle import selectors
from changes.lifecycle.admin import plan_rows
from changes.lifecycle.models import ChangeRun
from changes.lifecycle.services import open_change
from runs.config.registry import set_config
from runs.config.resolution import SanomaConfig
from runs.engine import clock
from runs.models import Approval, ApprovalRequester, Run, RunMessage, RunStatus
from runs.testing import make_user, resolve_on_fakes
from runs.tests.fixtures import acme

pytestmark = pytest.mark.django_db

SECRET = "whsec-changes-0123456789abcdef"
SHA = "1f" * 20
START = ["runs.start_workflow"]


def push_branches(repo: Path, work: Path, *branches: str) -> None:
    """`main` with one commit, and each branch one commit ahead of it, pushed to `repo`: a change is
    opened only for a branch the repository has."""
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=work, check=True,
                       capture_output=True)

    work.mkdir()
    git("init", "--quiet", "-b", "main")
    (work / "README.md").write_text("The company.\n")
    git("add", "README.md")
    git("commit", "--quiet", "-m", "start")
    git("push", "--quiet", str(repo), "main")
    for branch in branches:
        git("checkout", "--quiet", "-b", branch, "main")
        (work / f"{branch}.txt").write_text(f"{branch}\n")
        git("add", f"{branch}.txt")
        git("commit", "--quiet", "-m", branch)
        git("push", "--quiet", str(repo), branch)


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Path]:
    """A config on fakes whose root is not a git tree, and the company's repository: a bare one."""
    root = tmp_path / "site"
    root.mkdir()
    set_config(resolve_on_fakes(SanomaConfig(connectors=[acme], workflows=[], root=root)))
    repo = tmp_path / "company.git"
    subprocess.run(["git", "init", "--bare", "--quiet", str(repo)], check=True)
    push_branches(repo, tmp_path / "work", "raise-mug", "raise-cup", "b")
    with override_settings(SANOMA_REPO_URL=str(repo)):
        yield repo
    set_config(None)


def staff(username: str, **kwargs: Any) -> Any:
    user = make_user(username, **kwargs)
    user.is_staff = True
    user.save()
    return user


@pytest.fixture
def people(site: Path) -> dict[str, Any]:
    return {"alice": staff("alice", perms=START), "bob": staff("bob", perms=START),
            "olga": staff("olga", perms=["runs.view_any_run", "runs.operate_runs"])}


def api(user: Any) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def desk(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def nothing_opened() -> bool:
    return not ChangeRun.objects.exists() and not Run.objects.exists()


# ---- the API ------------------------------------------------------------------------------------


def test_opening_listing_and_reading_a_change_over_the_api(site, people):
    alice = api(people["alice"])
    reply = alice.post("/api/changes", {"branch": "raise-mug", "title": "Mug to 16.00",
                                        "description": "Mugs cost more", "wait_for_push": 3600}, format="json")
    assert reply.status_code == 201, reply.json()
    change = reply.json()
    run_id = change["run"]
    assert run_id.startswith("change-")
    assert {k: change[k] for k in ("status", "state", "branch", "base", "title", "description", "repository",
                                   "opened_by", "head", "checks", "plan", "approvals", "merged", "deployed")} == {
        "status": "queued", "state": "opened", "branch": "raise-mug", "base": "main", "title": "Mug to 16.00",
        "description": "Mugs cost more", "repository": str(site), "opened_by": "alice", "head": None,
        "checks": None, "plan": None, "approvals": [], "merged": None, "deployed": None}
    run = Run.objects.get(pk=run_id)
    assert (run.workflow, run.started_by) == ("change", "alice")
    assert run.input == {"branch": "raise-mug", "title": "Mug to 16.00", "description": "Mugs cost more",
                         "base": "main", "wait_for_push": 3600.0}

    listed = alice.get("/api/changes").json()
    assert listed["count"] == 1 and [c["run"] for c in listed["results"]] == [run_id]
    assert listed["results"][0] == alice.get(f"/api/changes/{run_id}").json() == change
    assert alice.get(f"/api/changes/{run_id}/").status_code == 200

    # A pull request instead of a branch: a repository on this machine has none, so it is refused at
    # once, on the field, rather than opening a run that fails on its first step.
    pr = alice.post("/api/changes", {"pull_request": "https://github.com/acme/ops/pull/7"}, format="json")
    assert pr.status_code == 400 and pr.json()["code"] == "invalid_input"
    assert [issue["path"] for issue in pr.json()["issues"]] == [["pull_request"]]
    assert "has no pull requests" in pr.json()["issues"][0]["message"]
    second = alice.post("/api/changes", {"branch": "raise-cup", "title": "Cup"}, format="json").json()
    assert [c["run"] for c in alice.get("/api/changes?limit=1").json()["results"]] == [second["run"]]
    assert alice.get("/api/changes?limit=1&offset=1").json()["results"][0]["run"] == run_id


def test_a_change_is_seen_only_by_who_may_see_its_run(site, people):
    run = open_change(branch="raise-mug", title="Mug to 16.00", by="alice")
    bob = api(people["bob"])
    assert bob.get("/api/changes").json() == {"count": 0, "next": None, "previous": None, "results": []}
    reply = bob.get(f"/api/changes/{run.id}")
    assert reply.status_code == 404 and reply.json()["code"] == "run_not_found"
    assert bob.get("/api/changes/change-0000000000000000000a").json()["code"] == "run_not_found"
    olga = api(people["olga"])  # an operator sees every change
    assert olga.get(f"/api/changes/{run.id}").json()["opened_by"] == "alice"
    assert [c["run"] for c in olga.get("/api/changes").json()["results"]] == [run.id]
    assert APIClient().get("/api/changes").status_code == 401
    assert APIClient().post("/api/changes", {"branch": "b", "title": "t"}, format="json").status_code == 401
    bad = api(people["alice"]).get("/api/changes/no such run")
    assert bad.status_code == 400 and bad.json()["issues"][0]["path"] == ["run_id"]


@pytest.mark.parametrize(("body", "field", "said"), [
    ({}, "branch", "one of them"),
    ({"title": "Mug"}, "branch", "one of them"),
    ({"branch": "raise mug", "title": "Mug"}, "branch", "letters, digits"),
    ({"branch": "raise-mug"}, "title", "needs a title"),
    ({"branch": "raise-mug", "title": "   "}, "title", "needs a title"),
    ({"branch": "main", "title": "Mug"}, "branch", "is the base"),
    ({"branch": "raise-mug", "pull_request": "https://github.com/acme/ops/pull/7", "title": "Mug"}, "branch",
     "one of them"),
    ({"branch": "raise-mug", "title": "Mug", "wait_for_push": -1}, "wait_for_push", "greater than or equal"),
    ({"branch": "raise-mug", "title": "Mug", "base": "ma in"}, "base", "letters, digits"),
    ({"branch": "raise-mug", "title": "M" * 201}, "title", "no more than 200"),
    ({"branch": "raise-mug", "title": "Mug", "url": "/elsewhere"}, "url", "unknown field"),
])
def test_bad_input_is_400_naming_the_field_and_opens_nothing(site, people, body, field, said):
    reply = api(people["alice"]).post("/api/changes", body, format="json")
    assert reply.status_code == 400, reply.json()
    answer = reply.json()
    assert answer["code"] == "invalid_input"
    assert [issue["path"] for issue in answer["issues"]] == [[field]]
    assert said in answer["issues"][0]["message"]
    assert nothing_opened()


def test_a_site_with_no_repository_or_a_caller_who_may_not_start_opens_nothing(site, people):
    alice = api(people["alice"])
    with override_settings(SANOMA_REPO_URL=""):
        reply = alice.post("/api/changes", {"branch": "raise-mug", "title": "Mug"}, format="json")
    assert reply.status_code == 400 and "no repository" in reply.json()["error"]
    assert "SANOMA_REPO_URL" in reply.json()["error"]
    reply = api(make_user("nobody")).post("/api/changes", {"branch": "raise-mug", "title": "Mug"}, format="json")
    assert reply.status_code == 403 and reply.json()["code"] == "permission_denied"
    reply = alice.post("/api/changes", "branch=raise-mug", content_type="text/plain")
    assert reply.status_code == 415
    assert nothing_opened()


# ---- the GitHub webhook -------------------------------------------------------------------------


def signed(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def deliver(event: str, payload: Any, *, secret: str | None = SECRET, signature: str | None = None,
            raw: bytes | None = None, content_type: str = "application/json") -> Any:
    """A delivery as GitHub sends it: signed with `secret` unless a `signature` is given."""
    body = raw if raw is not None else json.dumps(payload).encode()
    headers: dict[str, Any] = {"HTTP_X_GITHUB_EVENT": event} if event else {}
    if signature is None and secret is not None:
        signature = signed(body, secret)
    if signature is not None:
        headers["HTTP_X_HUB_SIGNATURE_256"] = signature
    return APIClient().post("/api/changes/webhooks/github", body, content_type=content_type, **headers)


def push(branch: str = "raise-mug", sha: str = SHA) -> dict[str, Any]:
    return {"ref": f"refs/heads/{branch}", "before": "0" * 40, "after": sha, "deleted": False}


@pytest.fixture
def secret(monkeypatch) -> str:
    monkeypatch.setenv("SANOMA_GITHUB_WEBHOOK_SECRET", SECRET)
    return SECRET


def test_without_a_secret_or_with_a_bad_signature_a_delivery_does_nothing(site, people, monkeypatch):
    run = open_change(branch="raise-mug", title="Mug", by="alice")
    monkeypatch.delenv("SANOMA_GITHUB_WEBHOOK_SECRET", raising=False)
    reply = deliver("push", push(), secret="anything")
    assert reply.status_code == 403 and reply.json()["code"] == "webhook_not_configured"
    assert "SANOMA_GITHUB_WEBHOOK_SECRET is not set" in reply.json()["error"]

    monkeypatch.setenv("SANOMA_GITHUB_WEBHOOK_SECRET", SECRET)
    for reply in (deliver("push", push(), secret="another secret"),
                  deliver("push", push(), secret=None),
                  deliver("push", push(), signature="sha1=" + "0" * 40),
                  deliver("push", push(), raw=b"{}", signature=signed(json.dumps(push()).encode()))):
        assert reply.status_code == 403 and reply.json()["code"] == "bad_signature", reply.json()
    assert not RunMessage.objects.filter(run_id=run.id).exists()


def test_a_signed_push_reaches_the_branchs_change_once(site, people, secret):
    run = open_change(branch="raise-mug", title="Mug", by="alice")
    other = open_change(branch="raise-cup", title="Cup", by="bob")
    reply = deliver("push", push())
    assert reply.status_code == 202, reply.json()
    assert reply.json() == {"event": "push", "ignored": [],
                            "told": [{"topic": "pushed", "branch": "raise-mug", "sha": SHA, "runs": [run.id]}]}
    message = RunMessage.objects.get(run_id=run.id)
    assert (message.topic, message.sent_by, message.message_id) == ("pushed", "alice", f"pushed:raise-mug:{SHA}")
    assert message.payload == {"branch": "raise-mug", "sha": SHA, "via": "github"}
    assert message.read_seq is None  # no worker: the run has not read it yet
    assert not RunMessage.objects.filter(run_id=other.id).exists()
    # GitHub redelivers: the message is the same one, not a second.
    assert deliver("push", push()).status_code == 202
    assert RunMessage.objects.filter(run_id=run.id).count() == 1


def test_each_github_event_becomes_the_message_it_means(site, people, secret):
    run = open_change(branch="raise-mug", title="Mug", by="alice")
    passed = {"action": "completed", "check_suite": {"head_branch": "raise-mug", "head_sha": SHA,
                                                     "conclusion": "success", "app": {"slug": "actions"}}}
    assert deliver("check_suite", passed).status_code == 202
    failed = {"action": "completed", "check_run": {"name": "lint", "head_sha": SHA, "conclusion": "failure",
                                                   "check_suite": {"head_branch": "raise-mug"}}}
    reply = deliver("check_run", failed)
    assert reply.status_code == 200 and reply.json()["told"] == []
    assert reply.json()["ignored"][0]["topic"] == "checks_failed"
    assert "not checks_failed" in reply.json()["ignored"][0]["reason"]
    merged = {"action": "closed", "number": 7, "pull_request": {
        "merged": True, "merge_commit_sha": "2e" * 20, "head": {"ref": "raise-mug", "sha": SHA},
        "base": {"ref": "main"}, "html_url": "https://github.com/acme/ops/pull/7"}}
    assert deliver("pull_request", merged).status_code == 202
    sent = list(RunMessage.objects.filter(run_id=run.id).order_by("id").values_list("topic", "payload"))
    assert [topic for topic, _ in sent] == ["checks_passed", "merged"]
    assert sent[0][1] == {"branch": "raise-mug", "sha": SHA, "via": "github"}
    assert sent[1][1] == {"branch": "raise-mug", "sha": "2e" * 20, "via": "github"}

    # A ping, an event of no meaning, a branch with no change, a change that ended: nothing is told.
    assert deliver("ping", {"zen": "Keep it logically awesome."}).json() == {"event": "ping", "told": [],
                                                                              "ignored": []}
    assert deliver("issues", {"action": "opened"}).status_code == 200
    assert deliver("push", push(branch="raise-tea")).json()["told"] == []
    Run.objects.filter(pk=run.id).update(status=RunStatus.FINISHED)
    assert deliver("push", push(sha="3d" * 20)).json()["told"] == []
    assert RunMessage.objects.filter(run_id=run.id).count() == 2


def test_a_signed_delivery_that_is_not_json_is_refused(site, people, secret):
    open_change(branch="raise-mug", title="Mug", by="alice")
    reply = deliver("push", None, raw=b'{"ref": ')
    assert reply.status_code == 400 and reply.json()["code"] == "invalid_input"
    assert reply.json()["error"].startswith("The delivery is not valid JSON: Expecting value")
    reply = deliver("push", None, raw=b"[1, 2]")
    assert reply.status_code == 400 and reply.json()["error"] == "The delivery must be a JSON object"
    reply = deliver("", push())
    assert reply.status_code == 400 and reply.json()["issues"][0]["path"] == ["X-GitHub-Event"]
    reply = deliver("push", None, raw=b"payload=%7B%7D", content_type="application/x-www-form-urlencoded")
    assert reply.status_code == 415 and "application/json" in reply.json()["error"]
    assert not RunMessage.objects.exists()


# ---- the admin ----------------------------------------------------------------------------------

CHECKS = {"ok": False, "failed": ["lint", "scenarios"], "sha": SHA, "checks": [
    {"name": "config", "ok": True, "skipped": "", "summary": "4 workflow(s), version acme@1", "problems": []},
    {"name": "lint", "ok": False, "skipped": "", "summary": "12 file(s), 1 problem(s)", "problems": [
        {"file": "workflows/refund.py", "line": 12, "column": 5, "message": "ctx.call of an unknown operation"}]},
    {"name": "scenarios", "ok": False, "skipped": "the config does not resolve", "summary": "", "problems": []},
]}
PLAN = {"empty": False, "changes": [
    {"action": "update", "type": "shop.product", "name": "mug", "file": "resources/catalog.py", "line": 4,
     "fields": [{"path": "price_cents", "actual": 1500, "desired": 1600}],
     "calls": [{"op": "shop.product.update", "verdict": {"decision": "held", "approver": "group:owners"}}]},
    {"action": "create", "type": "shop.product", "name": "cup", "file": "resources/catalog.py", "line": 5,
     "fields": [], "calls": [{"op": "shop.product.create", "verdict": {"decision": "allow"}}]},
    {"action": "delete", "type": "shop.staff_role", "name": "sam", "file": "resources/staff.py", "line": 9,
     "fields": [], "calls": [{"op": "shop.staff_role.delete",
                              "verdict": {"decision": "deny", "reason": "roles are never deleted"}}]},
]}


def as_the_run_noted_it(run: Run) -> None:
    """What the change's operations write on its row as it goes, and the merge's hold."""
    ChangeRun.objects.filter(pk=run.id).update(
        head_sha=SHA, checks=CHECKS, plan=PLAN, state="checks_passed", merged_sha="4c" * 20,
        deployed_revision="4c" * 20, deployed_version="acme@2")
    Run.objects.filter(pk=run.id).update(status=RunStatus.WAITING, waiting_for="approval")
    Approval.objects.create(run=run, approval_id="a1", seq=1, title="Merge raise-mug into main",
                            approver="group:owners", requested_by=ApprovalRequester.POLICY,
                            op="sanoma.change.merge", requested_at=clock.now())


def test_the_changes_list_shows_the_changes_each_user_may_see(site, people):
    mine = open_change(branch="raise-mug", title="Mug to 16.00", by="alice")
    page = desk(people["alice"]).get("/admin/lifecycle/changerun/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Mug to 16.00" in text and "raise-mug" in text and "queued" in text
    assert 'href="/admin/lifecycle/changerun/open/"' in text and "Open a change" in text
    assert f'href="/admin/lifecycle/changerun/{quote(mine.id)}/change/' in text
    assert "Mug to 16.00" in desk(people["olga"]).get("/admin/lifecycle/changerun/").content.decode()
    open_change(branch="raise-cup", title="Cup to 9.00", by="bob")
    for query, shown, hidden in (("?q=mug", "Mug to 16.00", "Cup to 9.00"), ("?state__exact=merged", "0 changes",
                                                                              "Mug to 16.00"), ("?o=4", "Mug", "")):
        text = desk(people["olga"]).get(f"/admin/lifecycle/changerun/{query}").content.decode()
        assert shown in text and (not hidden or hidden not in text), query
    assert "Mug to 16.00" not in desk(people["bob"]).get("/admin/lifecycle/changerun/").content.decode()
    # Read-only: nothing is added, changed or deleted through the admin.
    assert desk(people["olga"]).get("/admin/lifecycle/changerun/add/").status_code == 403
    assert desk(people["olga"]).post(f"/admin/lifecycle/changerun/{quote(mine.id)}/delete/").status_code == 403
    assert ChangeRun.objects.filter(pk=mine.id).exists()
    # The desk's home lists it under Changes.
    assert 'href="/admin/lifecycle/changerun/"' in desk(people["alice"]).get("/admin/").content.decode()


def test_a_changes_page_shows_its_checks_plan_approval_merge_and_deploy(site, people):
    run = open_change(branch="raise-mug", title="Mug to 16.00", by="alice")
    as_the_run_noted_it(run)
    url = f"/admin/lifecycle/changerun/{quote(run.id)}/change/"
    for who in ("alice", "olga"):
        page = desk(people[who]).get(url)
        assert page.status_code == 200, who
        text = page.content.decode()
        assert "checks passed" in text and f"{SHA}" in text
        # The checks report: each check ok, failed or skipped, its problems at file:line.
        assert '<tr class="sanoma-check ok">\n        <th>config</th><td>ok</td>' in text
        assert '<tr class="sanoma-check failed">\n        <th>lint</th><td>failed</td>' in text
        assert '<li class="problem">workflows/refund.py:12: ctx.call of an unknown operation</li>' in text
        assert '<th>scenarios</th><td>skipped</td>\n        <td>the config does not resolve' in text
        # The plan, each call with the policy's verdict.
        assert "shop.product.update: held for group:owners" in text
        assert "shop.product.create: allow" in text
        assert "shop.staff_role.delete: deny: roles are never deleted" in text
        # The plan's "from" side is the vendor's value now (what a drift read), not the repository's.
        assert "price_cents: 1500 <span class=\"sanoma-side\">(the vendor's value now)</span> &rarr; 1600" \
            in text
        # The approval waited for, decided on the run's page; the run linked.
        run_url = f"/admin/runs/run/{quote(run.id)}/change/"
        approval = Approval.objects.get(run=run)
        assert "waiting for <strong>group:owners</strong>" in text
        assert f'<a href="{run_url}">run\'s page</a>' in text
        assert f'href="/admin/runs/approval/{approval.pk}/change/"' in text
        assert f'<a href="{run_url}">{run.id}</a>: waiting, waiting for approval' in text
        # Merge and deploy, and the revision deployed.
        assert f"merged as {'4c' * 20}" in text
        assert f"deployed: revision {'4c' * 20} on version acme@2" in text
        assert "/history/" not in text  # no History button: nothing here is edited
    hidden = desk(people["bob"]).get(url, follow=True)
    assert hidden.redirect_chain[-1][0] == "/admin/lifecycle/changerun/"
    assert f"No change {run.id}, or you may not see it" in hidden.content.decode()
    assert "Mug to 16.00" not in hidden.content.decode() and SHA not in hidden.content.decode()


def test_a_changes_page_says_what_its_apply_made(site, people):
    run = open_change(branch="raise-mug", title="Mug to 16.00", by="alice")
    as_the_run_noted_it(run)
    url = f"/admin/lifecycle/changerun/{quote(run.id)}/change/"
    assert '<td id="change-applied">applying</td>' in desk(people["alice"]).get(url).content.decode()
    Run.objects.filter(pk=run.id).update(status=RunStatus.FINISHED, result={"applied": {
        "done": 1, "failed": 1, "skipped": 0, "planned_create": 1, "planned_update": 1}})
    text = desk(people["alice"]).get(url).content.decode()
    assert '<td id="change-applied">1 of 2 planned changes made (1 create, 1 update); not made: 1 failed</td>' in text


def test_the_plan_says_where_the_vendor_has_drifted_from_the_sites_data_files():
    plan = {"changes": [{"resource": "shop.product.mug", "fields": [
        {"path": "price_cents", "actual": 1600, "desired": 1750}, {"path": "title", "actual": "Mug", "desired": "M"},
        {"path": "price.amount", "actual": 1, "desired": 2}]}]}
    declared = {"shop.product.mug": {"price_cents": 1500, "title": "Mug", "price": {"amount": 1}}}
    # 1600 at the vendor, 1500 in the data files (the diff's old side): said; the others agree.
    assert selectors.drifted_fields(plan, declared) == {("shop.product.mug", "price_cents"): 1500}
    assert selectors.drifted_fields(plan, {}) == {}
    [row] = plan_rows(plan, selectors.drifted_fields(plan, declared))
    assert row["fields"][0]["declared"] == 1500 and "declared" not in row["fields"][1]


def test_a_change_not_checked_yet_says_so(site, people):
    run = open_change(branch="raise-mug", title="Mug to 16.00", by="alice")
    text = desk(people["alice"]).get(f"/admin/lifecycle/changerun/{quote(run.id)}/change/").content.decode()
    assert "Not checked yet." in text and "No plan yet" in text
    assert "not merged yet" in text and "not deployed" in text and "not resolved yet" in text


def test_the_open_a_change_form_opens_a_change_as_the_signed_in_user(site, people):
    client = desk(people["alice"])
    form = client.get("/admin/lifecycle/changerun/open/")
    assert form.status_code == 200
    assert 'name="branch"' in form.content.decode() and 'name="title"' in form.content.decode()
    reply = client.post("/admin/lifecycle/changerun/open/", {"branch": "raise-mug", "title": "Mug to 16.00",
                                                           "description": "Mugs cost more"})
    row = ChangeRun.objects.get()
    assert reply.status_code == 302 and reply["Location"] == f"/admin/lifecycle/changerun/{quote(row.run_id)}/change/"
    assert (row.branch, row.title, row.description, row.opened_by, row.repo_url) == (
        "raise-mug", "Mug to 16.00", "Mugs cost more", "alice", str(site))
    run = Run.objects.get(pk=row.run_id)
    assert (run.workflow, run.started_by, run.status) == ("change", "alice", RunStatus.QUEUED)
    assert "Opened the change of raise-mug" in client.get(reply["Location"]).content.decode()


@pytest.mark.parametrize(("data", "field", "said"), [
    ({"branch": "raise mug", "title": "Mug"}, "branch", "A branch name is letters, digits"),
    ({"branch": "", "title": "Mug"}, "branch", "This field is required."),
    ({"branch": "raise-mug", "title": ""}, "title", "This field is required."),
    ({"branch": "main", "title": "Mug"}, "branch", "This is the base (main)"),
    ({"branch": "raise-mug", "title": "M" * 201}, "title", "at most 200 characters"),
])
def test_the_form_refuses_bad_input_on_its_field_and_opens_nothing(site, people, data, field, said):
    reply = desk(people["alice"]).post("/admin/lifecycle/changerun/open/", data)
    assert reply.status_code == 200
    assert list(reply.context["form"].errors) == [field]
    assert said in reply.context["form"].errors[field][0]
    text = reply.content.decode()
    assert f'<div class="form-row field-{field} errors">' in text and "Nothing was opened." in text
    assert nothing_opened()


def test_the_form_shows_a_refusal_of_the_service_and_opens_nothing(site, people):
    with override_settings(SANOMA_REPO_URL=""):
        reply = desk(people["alice"]).post("/admin/lifecycle/changerun/open/", {"branch": "raise-mug", "title": "Mug"})
    assert reply.status_code == 200
    assert "no repository" in " ".join(reply.context["form"].non_field_errors())
    reply = desk(staff("sam")).post("/admin/lifecycle/changerun/open/", {"branch": "raise-mug", "title": "Mug"})
    assert "(permission_denied)" in " ".join(reply.context["form"].non_field_errors())
    # A branch the repository lacks: said on the field, the repository as the desk shows it (beside the root).
    reply = desk(people["alice"]).post("/admin/lifecycle/changerun/open/", {"branch": "no-such", "title": "Mug"})
    said = " ".join(reply.context["form"].errors.get("branch", []) + reply.context["form"].non_field_errors())
    assert "no-such" in said and str(site.parent) not in said, said
    assert nothing_opened()
