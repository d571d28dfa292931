"""Declared state on the desk as operators meet it, in a real browser (headless Chromium through
Selenium): drift, plan and apply from the resources page, which follows its runs live and says
what the policy will refuse before the click; an apply that did not make every change shown in red
with its counts, here and on its run's page; no Apply for someone the plan shows is denied
everything; the credentials as they are; a change's page following its checks live.

Each journey clicks and types as a person does and waits for the page; nothing posts to a URL the
page does not offer. A stand-in worker thread advances the runs, as `manage.py worker` would.
Needs Debian's `chromium` and `chromium-driver` and the `selenium` package; skipped otherwise.
"""
from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from changes import services
from changes.credentials import runtime
from changes.credentials.tests.credentials_company.harness import TEST_KEY
from changes.lifecycle.remotes.git_setup import init_embedded
from changes.lifecycle.tests.gitco import use, write_root
from changes.resources.workflows import RECORD_OP
from changes.tests.conftest import staff
from changes.tests.test_desk_state import TWO_DENIED
from changes.tests.test_drift_apply import DenySome
from runs import services as run_services
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig
from runs.engine.drain import drain
from runs.models import Run
from runs.tests import browser_support as support
from runs.tests.browser_support import (
    BROWSER_TESTS,
    EC,
    PASSWORD,
    By,
    WebDriverWait,
    full_page,
    text_of,
)

browser = support.browser
shots = support.shots
pytestmark = BROWSER_TESTS

WAIT = 60  # seconds: a live page reads itself again every 3 s, and the checks take ~10 s on a loaded machine


def with_password(username: str) -> None:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username=username)
    user.set_password(PASSWORD)
    user.save()


class Worker:
    """Advances every runnable run of the config in a thread of its own, as a worker would."""

    def __init__(self, config: ResolvedConfig) -> None:
        self.config = config
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._work, daemon=True)

    def _work(self) -> None:
        try:
            while not self.stop.is_set():
                drain(self.config)
                time.sleep(0.1)
        finally:
            connection.close()

    def __enter__(self) -> Worker:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=120)


def sign_in(browser, site: str, username: str) -> None:
    """The login page, as a person fills it in; then the desk's home."""
    browser.get(f"{site}/admin/login/?next=/admin/")
    browser.find_element(By.NAME, "username").send_keys(username)
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    WebDriverWait(browser, WAIT).until(EC.presence_of_element_located((By.ID, "user-tools")))


def open_from_sidebar(browser, label: str) -> None:
    """Click the desk's link to a page: in the sidebar, or on the home page's list of apps."""
    links = browser.find_elements(By.XPATH, f"//nav[@id='nav-sidebar']//a[normalize-space(text())='{label}']") or \
        browser.find_elements(By.XPATH, f"//div[@id='content-main']//th/a[normalize-space(text())='{label}']")
    assert links, f"no link {label!r} on {browser.current_url}"
    links[0].click()


def mark_page(browser) -> None:
    """Leave a mark on this page: it is gone if the page is loaded again."""
    browser.execute_script("window.sanomaSamePage = 'yes'")


def same_page(browser) -> bool:
    return browser.execute_script("return window.sanomaSamePage") == "yes"


def shows(browser, element_id: str, text: str) -> Callable[[object], bool]:
    def found(_: object) -> bool:
        try:
            return text in text_of(browser, element_id)
        except Exception:  # not on the page yet
            return False
    return found


def snapshot(browser, text: str) -> Callable[[object], str | None]:
    """The page's content as one text, once it holds `text` (one reading: never two states mixed)."""
    def found(_: object) -> str | None:
        try:
            whole = browser.execute_script("return document.getElementById('content-main').innerText")
        except Exception:  # between two pages
            return None
        whole = " ".join(str(whole or "").split())  # table cells come tab-separated
        return whole if text in whole else None
    return found


def test_the_operator_drifts_sees_what_will_be_refused_applies_and_sees_it_incomplete_in_red(
        live_server, company, browser, shots):
    company.policy = DenySome(TWO_DENIED)
    with_password("ops")
    wait = WebDriverWait(browser, WAIT)
    with Worker(company):
        sign_in(browser, live_server.url, "ops")
        open_from_sidebar(browser, "Resources")
        assert "No drift run yet." in text_of(browser, "content-main")

        drift_button = browser.find_element(By.ID, "run-drift")
        drift_button.click()
        wait.until(EC.staleness_of(drift_button))  # the page the click loads, not the one it left
        wait.until(EC.presence_of_element_located((By.ID, "run-drift")))
        mark_page(browser)
        # The run's result lands on the page without a reload: the plan, and what will be refused.
        wait.until(shows(browser, "content-main", "2 of 19 changes will be refused"))
        assert same_page(browser)
        assert text_of(browser, "plan-refused") == \
            "2 of 19 changes will be refused: the policy denies them to you (marked denied below)."
        refused = [row.text.split("\n")[0] for row in browser.find_elements(By.CSS_SELECTOR, "#plan tr.refused")]
        assert refused == ["create (refused) shop.product tote (resources/catalog.py:7)",
                           "create (refused) sanoma.person sam (resources/staff.py:30)"], refused
        apply_button = browser.find_element(By.ID, "apply")
        assert apply_button.get_attribute("value") == "Apply (2 of 19 will be refused)"

        apply_button.click()
        wait.until(EC.staleness_of(apply_button))  # the page the click loads, not the one it left
        wait.until(EC.presence_of_element_located((By.ID, "run-drift")))
        mark_page(browser)
        wait.until(shows(browser, "content-main", "not made: 2 denied, 1 skipped"))
        assert same_page(browser)
        outcome = browser.find_element(By.ID, "apply-incomplete")
        assert "16 of 19 changes applied; not made: 2 denied, 1 skipped" in outcome.text
        assert outcome.value_of_css_property("color") == "rgba(186, 33, 33, 1)"  # the desk's red (--error-fg)
        full_page(browser, shots / "resources-apply-incomplete.png")

        # Its run's page says the same: failed, with the code and the counts.
        run = Run.objects.get(workflow="apply")
        browser.find_element(By.CSS_SELECTOR, f"#latest-apply a[href='/admin/runs/run/{run.id}/change/']").click()
        wait.until(EC.presence_of_element_located((By.ID, "run-now")))
        now = text_of(browser, "run-now")
        assert now.startswith("Failed ") and \
            "with apply_incomplete: 3 of 19 changes not made (2 denied, 1 skipped); 16 applied" in now, now
        full_page(browser, shots / "apply-run-incomplete.png")


def test_someone_the_plan_shows_is_denied_everything_is_not_offered_apply(live_server, company, browser, shots):
    with_password("intern")  # may start runs, is not staff: the company's policy denies them every write
    wait = WebDriverWait(browser, WAIT)
    with Worker(company):
        sign_in(browser, live_server.url, "intern")
        open_from_sidebar(browser, "Resources")
        browser.find_element(By.ID, "run-drift").click()
        wait.until(shows(browser, "content-main", "The policy denies every change of this plan to you"))
    assert text_of(browser, "plan-refused") == \
        "The policy denies every change of this plan to you: an apply would make none of them."
    assert browser.find_elements(By.ID, "apply") == []
    assert browser.find_element(By.ID, "run-drift").is_displayed()  # drift is theirs to run: reads are open
    full_page(browser, shots / "resources-all-refused.png")


def test_a_hold_nobody_could_decide_is_said_before_the_apply_and_on_its_run_page(live_server, company, browser, shots):
    # sec is the security group's only member: separation of duties keeps his own holds from him.
    services.drift(by="sec", here=True, config=company)
    with_password("sec")
    wait = WebDriverWait(browser, WAIT)
    sign_in(browser, live_server.url, "sec")
    open_from_sidebar(browser, "Resources")
    stuck = "held for group:security, whose only member (sec) is the one applying: nobody could decide it"
    assert stuck in text_of(browser, "plan")
    stuck_rows = browser.find_elements(By.CSS_SELECTOR, "#plan tr.stuck")
    assert stuck_rows and f"{len(stuck_rows)} of " in text_of(browser, "plan-stuck")
    assert "would wait for an approval nobody could decide" in text_of(browser, "plan-stuck")
    apply_button = browser.find_element(By.ID, "apply")
    assert apply_button.get_attribute("value").startswith("Apply (") and \
        "would wait for an approval nobody can decide" in apply_button.get_attribute("value")
    full_page(browser, shots / "resources-nobody-decides.png")

    apply_button.click()  # he may still apply (what is not held goes through); the run then waits
    wait.until(EC.presence_of_element_located((By.ID, "latest-apply")))
    run = Run.objects.get(workflow="apply")
    for _ in range(200):
        drain(company)
        run.refresh_from_db()
        if run.status == "waiting":
            break
    assert run.waiting_for == "approval"
    browser.get(f"{live_server.url}/admin/runs/run/{run.id}/change/")
    waits = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".field-waiting_detail .readonly")))
    assert "nobody can decide this: group:security, whose only member (sec) started this run" in waits.text
    assert browser.find_element(By.CSS_SELECTOR, ".field-waiting_detail .sanoma-nobody") \
        .value_of_css_property("color") == "rgba(186, 33, 33, 1)"

    # He cancels it: the Resources page says what it had made, and that the drift shown is older.
    made = sum(1 for s in run.steps.filter(kind="call", error__isnull=True)
               if s.name in company.ops and company.ops[s.name].effect != "read" and s.name != RECORD_OP)
    assert made > 0
    run_services.cancel(run_id=run.id, by="sec", reason="nobody can approve it")
    open_from_sidebar(browser, "Resources")
    cancelled = text_of(browser, "apply-cancelled")
    drift_result = Run.objects.get(workflow="drift").result
    assert isinstance(drift_result, dict)
    changes: list[dict[str, Any]] = services.plan(drift_result, by="sec", config=company)["changes"]
    planned = sum(len(c["calls"]) for c in changes)
    assert f"after making {made} of the {planned} vendor calls planned: those changes are made" in cancelled, cancelled
    stale = browser.find_elements(By.CSS_SELECTOR, "#resources .stale")
    assert stale and all(s.text == "(before the latest apply)" for s in stale)


def test_an_apply_offered_before_the_policy_changed_is_refused_on_the_click(live_server, company, browser):
    company.policy = DenySome({})
    services.drift(by="ops", here=True, config=company)
    with_password("ops")
    sign_in(browser, live_server.url, "ops")
    open_from_sidebar(browser, "Resources")
    apply_button = browser.find_element(By.ID, "apply")
    assert apply_button.get_attribute("value") == "Apply"
    # Meanwhile the policy changes: every write is now denied to ops.
    company.policy = _deny_writes()
    apply_button.click()
    message = WebDriverWait(browser, WAIT).until(EC.presence_of_element_located((By.CSS_SELECTOR, "ul.messagelist")))
    assert "The policy denies every change of this plan to ops" in message.text
    assert "nothing was started (policy_denied)" in message.text
    assert not Run.objects.filter(workflow="apply").exists()


def _deny_writes():
    """A policy that lets every read through and denies every write."""
    from runs.policies.python_policies import allow_all

    class DenyWrites:
        kind = "python"

        def decide(self, call):
            decided = allow_all.decide(call)
            if call.effect == "read":
                return decided
            return type(decided)(kind="deny", reason="frozen for the audit")

    return DenyWrites()


def test_the_credentials_read_as_they_are_and_a_set_value_reads_set(live_server, company, browser, shots,
                                                                    monkeypatch, settings):
    monkeypatch.delenv("SHOP_WEBHOOK_SECRET")
    settings.SANOMA_SECRETS_KEY = [TEST_KEY]
    runtime.invalidate()
    staff("keeper", perms=["credentials.manage_credentials"])
    with_password("keeper")
    wait = WebDriverWait(browser, WAIT)
    sign_in(browser, live_server.url, "keeper")
    open_from_sidebar(browser, "Credentials")

    def row(name: str):
        return browser.find_element(By.XPATH, f"//table[@id='credentials']//tr[th[normalize-space(text())='{name}']]")

    def status(name: str) -> str:
        return row(name).find_element(By.CSS_SELECTOR, ".credential-status").text

    assert status("SHOP_WEBHOOK_SECRET") == "missing: a data file needs it: resources/webhooks.py:5 (orders_hook)"
    assert row("SHOP_WEBHOOK_SECRET").find_element(By.CSS_SELECTOR, ".credential-status") \
        .value_of_css_property("color") == "rgba(186, 33, 33, 1)"
    assert status("GITHUB_TOKEN") == "not set: optional, the driver gets no value"
    assert status("SHOP_API_URL") == "missing"
    assert "set" not in [status(n) for n in ("SHOP_WEBHOOK_SECRET", "GITHUB_TOKEN", "SHOP_API_URL")]
    full_page(browser, shots / "credentials-missing.png")

    row("SHOP_WEBHOOK_SECRET").find_element(By.LINK_TEXT, "Set").click()
    field = wait.until(EC.presence_of_element_located((By.NAME, "value")))
    field.send_keys("whsec-typed-in-0123456789")
    browser.find_element(By.CSS_SELECTOR, "input[type=submit][value=Store]").click()
    wait.until(EC.presence_of_element_located((By.ID, "credentials")))
    assert status("SHOP_WEBHOOK_SECRET") == "set"
    assert row("SHOP_WEBHOOK_SECRET").find_elements(By.TAG_NAME, "td")[3].text == "stored"

    # The connector's page in the catalog says the same.
    open_from_sidebar(browser, "Connectors")
    browser.find_element(By.XPATH, "//a[normalize-space(text())='Shop' or normalize-space(text())='shop']").click()
    table = wait.until(EC.presence_of_element_located((By.ID, "credentials")))
    cells = {r.find_elements(By.TAG_NAME, "td")[0].text: r.find_elements(By.TAG_NAME, "td")[1].text
             for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")}
    assert cells == {"SHOP_API_URL": "missing", "SHOP_API_KEY": "missing", "SHOP_WEBHOOK_SECRET": "set"}


# ---- a change's page, live ----------------------------------------------------------------------

GIT = {"GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com", "GIT_COMMITTER_NAME": "Dev",
       "GIT_COMMITTER_EMAIL": "dev@example.com"}


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT}).stdout.strip()


@pytest.fixture
def gitco(tmp_path: Path, transactional_db) -> Iterator[ResolvedConfig]:
    """A small company whose root is a git tree with an embedded remote, and a branch pushed to it."""
    root = write_root(tmp_path / "site")
    remote = tmp_path / "gitco.git"
    init_embedded(root, remote)
    clone = tmp_path / "clone"
    git("clone", "--quiet", str(remote), str(clone), cwd=tmp_path)
    git("checkout", "--quiet", "-b", "hello", cwd=clone)
    (clone / "workflows" / "hello.py").write_text("# nothing to run yet\n")
    git("add", "-A", cwd=clone)
    git("commit", "--quiet", "-m", "Hello", cwd=clone)
    git("push", "--quiet", "origin", "hello", cwd=clone)
    config = use(root, tmp_path / "fakes")
    try:
        yield config
    finally:
        set_config(None)


@pytest.fixture
def checks_gate(monkeypatch) -> Iterator[threading.Event]:
    """Holds the change's checks (the real ones, in their own process) until the test opens the gate:
    on a quiet machine they may take less than the page's 3 s between readings, and "checking" would
    come and go unseen. The gate opens by itself after WAIT s, so nothing hangs."""
    from changes.lifecycle import checks

    gate = threading.Event()
    real = checks.run

    def held(*args, **kwargs):
        gate.wait(timeout=WAIT)
        return real(*args, **kwargs)

    monkeypatch.setattr(checks, "run", held)
    yield gate
    gate.set()


def test_a_changes_page_shows_checking_then_the_checks_outcome_without_a_reload(live_server, gitco, browser, shots,
                                                                               checks_gate):
    from django.contrib.auth import get_user_model

    get_user_model().objects.filter(username="alice").update(is_staff=True)
    with_password("alice")
    wait = WebDriverWait(browser, WAIT)
    with Worker(gitco):
        sign_in(browser, live_server.url, "alice")
        open_from_sidebar(browser, "Changes")
        browser.find_element(By.ID, "open-change").click()
        browser.find_element(By.NAME, "branch").send_keys("hello")
        browser.find_element(By.NAME, "title").send_keys("Say hello")
        browser.find_element(By.CSS_SELECTOR, "input[type=submit][name=_open]").click()
        wait.until(EC.presence_of_element_located((By.ID, "change-state")))
        mark_page(browser)
        # The worker takes it up: the page follows it to "checking", then to the checks' outcome.
        checking = str(wait.until(snapshot(browser, "state checking")))
        assert "Not checked yet." in checking  # one snapshot: the checks run, none reported yet
        checks_gate.set()
        passed = str(wait.until(snapshot(browser, "state checks passed")))
        assert same_page(browser)
        assert "CHECKS: PASSED" in passed.upper() and "config ok" in passed and "django ok" in passed
        wait.until(shows(browser, "change-merge", "waiting for approval"))
        assert "waiting for group:owners" in text_of(browser, "approvals")
        assert same_page(browser)
        full_page(browser, shots / "change-live.png")
