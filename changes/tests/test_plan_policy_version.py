"""A plan names the policy version it was judged with, and an apply refuses a plan judged with
another policy than the worker holds (`plan_policy_changed`, naming both), in the commands (run as
the docs say, exit 1), the API (409) and on the desk (a browser clicks Apply).

The worker is a real `manage.py worker` on the example company. Its deploy registers the policy it
holds on its `AppVersion` row (`workflows`, `policy_version`), as a deploy does; `head` is a copy
of the company whose `policies/shop.cedar` was edited, as after a policy-only change.
"""
from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from changes import services
from changes.plan_policy import worker_policies
from changes.tests.conftest import COMPANY, SECRET, staff
from company.vendors.shop import shop
from runs.config.registry import set_config
from runs.config.resolution import SanomaConfig, resolve_config
from runs.models import AppVersion, PresenceRole, Run, WorkerPresence
from runs.policies import load_cedar_policy
from runs.policies.versions import policy_version_of
from runs.tests import browser_support as support
from runs.tests.browser_support import BROWSER_TESTS, EC, By, WebDriverWait, full_page, text_of
from runs.tests.processes import REPO, Worker, database_url, worker_env

LIVE = "plan-policy-live"  # the worker's app version
HANG = 120  # only turns a hang into a failure
HOLD = '@approve("group:security")\nforbid(principal, action in Action::"access", resource);'

browser = support.browser
shots = support.shots


def head_copy(tmp_path: Path) -> Path:
    """The company with its access holds moved from security to owners: a policy-only change."""
    head = tmp_path / "head" / "company"
    shutil.copytree(COMPANY, head, ignore=shutil.ignore_patterns("__pycache__"))
    policy = head / "policies" / "shop.cedar"
    assert HOLD in policy.read_text()
    policy.write_text(policy.read_text().replace(HOLD, HOLD.replace("group:security", "group:owners")))
    return head


def version_of(root: Path) -> str:
    return policy_version_of(load_cedar_policy(root / "policies"))


@pytest.fixture
def worker(transactional_db, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A real worker on the example company, its deploy's policy registered; ops may start runs."""
    staff("ops", groups=["staff"], perms=["runs.start_workflow"])
    staff("sec", groups=["staff", "security"], perms=["runs.start_workflow"])
    env = worker_env(db_url=database_url(connection.settings_dict), var_dir=tmp_path / "var", version=LIVE,
                     root=COMPANY, SHOP_WEBHOOK_SECRET=SECRET, SANOMA_WORKERS=1)
    process = Worker(env, tmp_path / "worker.log")
    try:
        process.start()
        process.wait_for(lambda: WorkerPresence.objects.filter(role=PresenceRole.WORKER, version=f"acme@{LIVE}")
                         .exists(), within=HANG, what="the worker's presence")
        row = AppVersion.objects.get(version=f"acme@{LIVE}")
        if not row.workflows:  # what the deploy registers beside the version, when the worker did not
            row.workflows = {"drift": f"drift@{LIVE}", "apply": f"apply@{LIVE}"}
            row.policy_version = version_of(COMPANY)
            row.save()
        assert set(worker_policies().values()) == {version_of(COMPANY)}
        yield {"env": env, "head": head_copy(tmp_path), "live": version_of(COMPANY)}
    finally:
        process.cleanup()


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "manage.py"), *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=HANG)


def client_for(username: str) -> APIClient:
    from django.contrib.auth import get_user_model

    client = APIClient()
    token, _ = Token.objects.get_or_create(user=get_user_model().objects.get(username=username))
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def company_with(policy_root: Path) -> Any:
    """The example company in this process, its policy read from `policy_root` (the server's code)."""
    config = resolve_config(SanomaConfig(app_name="acme", connectors=[shop], root=COMPANY,
                                         policy=load_cedar_policy(policy_root / "policies")), fakes="instance")
    set_config(config)
    return config


def test_a_plan_says_which_policy_it_was_judged_with(company):
    version = policy_version_of(company.policy)
    assert version == version_of(COMPANY) and version.startswith("policy@")
    out = io.StringIO()
    with pytest.raises(SystemExit):
        call_command("plan", "--as", "ops", "--here", stdout=out)
    assert out.getvalue().splitlines()[0] == f"judged with policy {version}"
    out = io.StringIO()
    with pytest.raises(SystemExit):
        call_command("plan", "--as", "ops", "--here", "--json", stdout=out)
    assert json.loads(out.getvalue())["policy_version"] == version
    reply = client_for("ops").get("/api/resources/plan")
    assert reply.status_code == 200 and reply.json()["policy_version"] == version


def test_plan_and_apply_refuse_when_the_worker_holds_another_policy(worker):
    head, live = worker["head"], worker["live"]
    changed = version_of(head)
    assert changed != live
    env = {**worker["env"], "SANOMA_ROOT": str(head), "SANOMA_APP_VERSION": "plan-policy-head"}
    for command in (["plan"], ["apply", "--yes"]):
        done = manage(env, *command, "--as", "ops")
        assert done.returncode == 1, f"{command}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
        said = done.stderr
        assert "[plan_policy_changed]" in said and "no worker" not in said, said
        assert f"The plan was judged with policy {changed}, but the worker holds policy {live}" in said, said
    assert not Run.objects.exists()  # nothing started

    # The plan made here judges with the head's policy: an apply of it is refused too.
    done = manage(env, "plan", "--as", "ops", "--here")
    assert done.returncode == 2 and done.stdout.splitlines()[0] == f"judged with policy {changed}", done.stderr


def test_the_api_refuses_an_apply_of_a_plan_judged_with_another_policy(worker):
    head, live = worker["head"], worker["live"]
    ops = client_for("ops")
    company_with(head)  # this server's code has the edited policy; the worker does not
    try:
        reply = ops.post("/api/resources/apply", {}, format="json")
        assert reply.status_code == 409 and reply.json()["code"] == "plan_policy_changed"
        assert version_of(head) in reply.json()["error"] and live in reply.json()["error"]
        reply = ops.post("/api/resources/apply", {"policy_version": "policy@0000000000000000"}, format="json")
        assert reply.status_code == 409 and "policy@0000000000000000" in reply.json()["error"]
        reply = ops.post("/api/resources/apply", {"policy_version": 7}, format="json")
        assert reply.status_code == 400 and reply.json()["issues"][0]["path"] == ["policy_version"]
        assert not Run.objects.exists()
        reply = ops.post("/api/resources/apply", {"policy_version": live}, format="json")  # the worker's: started
        assert reply.status_code == 202 and reply.json()["workflow"] == "apply"
    finally:
        set_config(None)


def browser_test(fn: Any) -> Any:
    for mark in BROWSER_TESTS:
        fn = mark(fn)
    return fn


@browser_test
def test_the_desk_warns_of_a_changed_policy_and_refuses_the_apply(worker, live_server, browser, shots):
    from changes.tests.test_desk_journeys_state import open_from_sidebar, sign_in, with_password

    head, live = worker["head"], worker["live"]
    config = company_with(head)
    try:
        services.drift(by="ops", here=True, config=config)  # the plan on the page: judged with the head's policy
        with_password("ops")
        wait = WebDriverWait(browser, 60)
        sign_in(browser, live_server.url, "ops")
        open_from_sidebar(browser, "Resources")
        wait.until(EC.presence_of_element_located((By.ID, "plan-policy")))
        assert text_of(browser, "plan-policy") == f"The verdicts below were judged with policy {version_of(head)}."
        warning = text_of(browser, "plan-policy-changed")
        assert f"The plan was judged with policy {version_of(head)}, but the worker holds policy {live}" in warning
        assert warning.endswith("an apply now is refused.")
        full_page(browser, shots / "resources-plan-policy-changed.png")

        apply_button = browser.find_element(By.ID, "apply")
        apply_button.click()
        wait.until(EC.staleness_of(apply_button))
        wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "ul.messagelist li.error")))
        said = browser.find_element(By.CSS_SELECTOR, "ul.messagelist li.error").text
        assert said.endswith("(plan_policy_changed)") and live in said and version_of(head) in said, said
        assert not Run.objects.filter(workflow="apply").exists()
    finally:
        set_config(None)
