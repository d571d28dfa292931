"""The desk's health page in a real browser (headless Chromium through Selenium): an operator opens
it from the desk's home page, sees every condition hold, and after a run is left queued and an
approval outlives its workflow's SLA, sees those conditions failing, each naming its alert.

Needs Debian's `chromium` and `chromium-driver` and the `selenium` package; skipped with the reason
when one is missing. `SANOMA_SCREENSHOT_DIR` keeps the screenshots (default: the test's temp dir);
with `SANOMA_README_SHOTS` naming a folder, the docs' picture of the page is left there too.
"""
from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest

from runs import services
from runs.authoring import define_workflow
from runs.config.registry import set_config
from runs.config.resolution import SanomaConfig
from runs.engine import clock
from runs.models import Approval, Run, RunStatus
from runs.testing import drain, make_user, resolve_on_fakes
from runs.tests import browser_support as support
from runs.tests.browser_support import BROWSER_TESTS, EC, By, StaleElementReferenceException, WebDriverWait, log_in

browser = support.browser
shots = support.shots

pytestmark = BROWSER_TESTS
LANDS = 45


def ask(ctx, input):
    ctx.approval("Pay the supplier?", approver="bob")
    return {"ok": True}


paying = define_workflow(name="paying", uses=["approval"], run=ask, approval_sla=timedelta(hours=4))


def until(driver, condition, seconds: float = LANDS):
    return WebDriverWait(driver, seconds, ignored_exceptions=(StaleElementReferenceException,)).until(condition)


def state(driver, key: str) -> tuple[str, str]:
    row = driver.find_element(By.ID, f"condition-{key}")
    return row.get_attribute("class"), row.text


@pytest.fixture
def config():
    resolved = resolve_on_fakes(SanomaConfig(connectors=[], workflows=[paying]))
    set_config(resolved)  # the live server's thread reads it too
    yield resolved
    set_config(None)


def test_an_operator_sees_the_conditions_the_alerts_watch(live_server, browser, shots, config):
    support.staff_user("olga")
    log_in(browser, live_server.url, "olga", then="/admin/")
    until(browser, EC.element_to_be_clickable((By.LINK_TEXT, "Conditions"))).click()
    until(browser, EC.presence_of_element_located((By.ID, "health")))
    assert browser.find_element(By.CSS_SELECTOR, "#content h1").text == "Health"
    summary = browser.find_element(By.ID, "health-summary").text
    assert summary.startswith("Every condition holds that is known (1 not known yet)."), summary
    assert state(browser, "approvals") == ("ok", state(browser, "approvals")[1])
    assert "none overdue (1 workflow(s) declare an SLA)" in state(browser, "approvals")[1]
    assert state(browser, "ledger")[0] == "unknown"

    # A run left queued for 20 minutes with no worker, and an approval waiting six hours on a 4-hour SLA.
    now = clock.now()
    Run.objects.create(id="stuck-1", workflow="paying", app_version="paying@1", input={}, started_by="olga",
                       status=RunStatus.QUEUED, queued_at=now - timedelta(minutes=20), created_at=now, updated_at=now)
    make_user("alice", perms=["runs.start_workflow"])
    waiting = services.start(workflow="paying", input={}, started_by="alice", config=config)
    drain(config)
    waiting.refresh_from_db()
    assert waiting.status == RunStatus.WAITING
    Approval.objects.filter(run=waiting).update(requested_at=now - timedelta(hours=6))

    browser.refresh()
    until(browser, lambda b: "need attention" in b.find_element(By.ID, "health-summary").text)
    assert browser.find_element(By.ID, "health-summary").text.startswith("3 conditions need attention.")
    kind, text = state(browser, "queue")
    assert kind == "failing" and "1 run(s) queued; the oldest for 20 min" in text and "SanomaRunQueuedTooLong" in text
    kind, text = state(browser, "workers")
    assert kind == "failing" and "no live worker, 1 run(s) runnable" in text
    kind, text = state(browser, "approvals")
    assert kind == "failing" and "paying: 1 pending longer than 4 h, the oldest for 6 h" in text, text
    assert "SanomaApprovalOverSLA" in text
    color = browser.find_element(By.CSS_SELECTOR, "#condition-queue td.state").value_of_css_property("color")
    assert color == "rgba(186, 33, 33, 1)", color  # failing shows in the desk's red
    assert state(browser, "wakeup")[0] == "ok" and state(browser, "vendors")[0] == "ok"
    support.full_page(browser, shots / "health.png")
    if folder := os.environ.get("SANOMA_README_SHOTS"):  # the docs' picture (docs/guides/operating/health.md)
        Path(folder).mkdir(parents=True, exist_ok=True)
        support.full_page(browser, Path(folder) / "health.png")
