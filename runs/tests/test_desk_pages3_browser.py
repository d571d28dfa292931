"""Desk pages met in a real browser (headless Chromium through Selenium), clicking as a person does,
all on one small company (one fixture): a direct call's page offers only what applies to a call, the
Approval announcements list is reached from the desk's navigation and shows an announcement's
status, a workflow's catalog page says when its approvals are overdue and how long its runs are
kept, and every page's icon loads.

Needs Debian's `chromium` and `chromium-driver` and the `selenium` package; skipped with the reason
when one is missing.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from runs.approvals.announce_models import AnnouncementStatus, ApprovalAnnouncement
from runs.authoring import define_workflow
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig, SanomaConfig
from runs.direct_calls import call
from runs.direct_calls.tests.test_direct_calls import hold_money
from runs.models import Approval
from runs.policies import define_policy
from runs.seed import seed_person
from runs.testing import resolve_on_fakes
from runs.tests import browser_support as support
from runs.tests.browser_support import BROWSER_TESTS, EC, By, StaleElementReferenceException, WebDriverWait, sign_in
from runs.tests.fixtures import acme

browser = support.browser
pytestmark = BROWSER_TESTS


def ask(ctx, input):
    return {"ok": True}


PROMISED = define_workflow(name="promised", run=ask, uses=[], approval_sla="4h", keep=timedelta(days=30))
UNPROMISED = define_workflow(name="unpromised", run=ask, uses=[])


@pytest.fixture
def desk(transactional_db) -> Iterator[ResolvedConfig]:
    """acme's connector on its fake (money held for finance-lead), two workflows, and the people who
    sign in (each one's password is their name): alice starts, ops operates."""
    config = resolve_on_fakes(SanomaConfig(connectors=[acme], workflows=[PROMISED, UNPROMISED],
                                           policy=define_policy(hold_money, version="v1")))
    set_config(config)
    seed_person(username="alice", staff=True, perms=("runs.start_workflow",), password="alice")
    seed_person(username="finance-lead", staff=True, perms=("runs.start_workflow",), password="finance-lead")
    seed_person(username="ops", staff=True, password="ops",
                perms=("runs.start_workflow", "runs.view_any_run", "runs.operate_runs", "runs.rerun_runs"))
    try:
        yield config
    finally:
        set_config(None)


def waiting(browser) -> WebDriverWait:
    return WebDriverWait(browser, 30, ignored_exceptions=(StaleElementReferenceException,))


def test_a_held_direct_calls_page_offers_cancel_only_and_its_announcement_is_listed(live_server, desk, browser):
    held = call(op="acme.order.refund", input={"order_id": "2", "amount": 900}, by="alice", key="refund-2",
                config=desk)
    assert held.outcome == "held"
    approval = Approval.objects.get(run_id=held.run_id)
    ApprovalAnnouncement.objects.create(
        approval=approval, run_id=held.run_id, key=f"sanoma:{approval.pk}", op="slack.message.post",
        message={"channel": "#finance"}, status=AnnouncementStatus.FAILED, attempts=3, next_at=timezone.now(),
        created_at=timezone.now(), error={"code": "driver_failed", "message": "channel_not_found"})
    wait = waiting(browser)

    # ops opens the call from the runs list: Cancel applies to a held call; a message or a fork does not.
    sign_in(browser, live_server.url, "ops", then="/admin/runs/run/")
    wait.until(EC.element_to_be_clickable((By.LINK_TEXT, held.run_id))).click()
    wait.until(EC.presence_of_element_located((By.ID, "run-now")))
    assert browser.find_elements(By.ID, "cancel-link") != []
    assert browser.find_elements(By.ID, "send-message") == []
    assert browser.find_elements(By.ID, "fork-link") == []
    assert "Send a message" not in browser.find_element(By.TAG_NAME, "body").text

    # The desk's navigation leads to the announcements, each with its status.
    browser.find_element(By.CSS_SELECTOR, "#site-name a").click()
    wait.until(EC.element_to_be_clickable((By.LINK_TEXT, "Approval announcements"))).click()
    row = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#result_list tbody tr")))
    assert held.run_id in row.text
    assert row.find_element(By.CSS_SELECTOR, "td.field-status").text == "failed"
    # Its moment as every desk page shows one (`2026-12-03 16:02:11 UTC (just now)`).
    created = row.find_element(By.CSS_SELECTOR, ".field-created").text
    assert re.match(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \S+ \(", created), created


def test_a_workflows_catalog_page_shows_its_approval_sla_and_keep_and_the_icon_loads(live_server, desk, browser):
    wait = waiting(browser)
    sign_in(browser, live_server.url, "alice", then="/admin/")
    wait.until(EC.element_to_be_clickable((By.LINK_TEXT, "Workflows"))).click()
    wait.until(EC.element_to_be_clickable((By.LINK_TEXT, "promised"))).click()
    assert wait.until(EC.presence_of_element_located((By.ID, "approval-sla"))).text == "4 hours"
    assert browser.find_element(By.ID, "keep").text == "30 days"
    browser.back()
    wait.until(EC.element_to_be_clickable((By.LINK_TEXT, "unpromised"))).click()
    assert wait.until(EC.presence_of_element_located((By.ID, "approval-sla"))).text == "no limit"
    assert "SANOMA_KEEP_ENDED_RUNS_DAYS" in browser.find_element(By.ID, "keep").text

    # The page's icon, as the browser asks for it: found, and an image.
    icon = browser.find_element(By.CSS_SELECTOR, "link[rel=icon]").get_attribute("href")
    assert icon == f"{live_server.url}/favicon.ico"
    answer = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0]).then(r => r.text().then(t => done([r.status, r.headers.get('content-type'), t.length])))",
        icon)
    assert answer[0] == 200 and answer[1] == "image/svg+xml" and answer[2] > 0, answer
