"""The approver's journeys in a real browser (headless Chromium through Selenium), on the example
company (`company/`, its shop on its fake) and the demo's people, doing what a person does: type,
click, wait for the page.

- alice starts a refund far above what any order holds: the start form refuses it on the amount
  field, naming the refund's ceiling, and nothing starts; she starts two real ones.
- finance-lead follows the badge to the inbox, tells the two refunds apart by what each does, how
  much it moves and who asked, opens the large one, approves it with a note, and sees it leave the
  inbox and its run finish.
- The superuser's inbox is what `/api/approvals` answers them: empty, since no approval names them.

Needs Debian's `chromium` and `chromium-driver` and the `selenium` package; skipped with the reason
when one is missing. `SANOMA_SCREENSHOT_DIR` keeps the screenshots.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from runs import services
from runs.config.resolution import ResolvedConfig
from runs.models import Approval, Run
from runs.tests import browser_support as support
from runs.tests.browser_support import (  # noqa: F401 (the demo's journeys import some from here)
    BROWSER_TESTS,
    EC,
    HAVE_SELENIUM,
    By,
    StaleElementReferenceException,
    WebDriverWait,
    approve,
    example_company,
    full_page,
    inbox_rows,
    open_approval,
    open_inbox,
    settled,
    sign_in,
    standin_worker,
    text_of,
    wait_for,
)

browser = support.browser
shots = support.shots
pytestmark = BROWSER_TESTS

COMPANY = Path(__file__).resolve().parents[2] / "company"
ABOVE = ("90,000,000,000,000.00 EUR is above the ceiling of 10,000.00 EUR that shop.order.refund declares")
MOMENT = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \((just now|.+ ago)\)$")


@pytest.fixture
def company(tmp_path: Path, transactional_db) -> Iterator[ResolvedConfig]:
    """The example company on its fakes, and the demo's people (each one's password is their name)."""
    with example_company(tmp_path / "fakes") as config:
        yield config


@pytest.fixture
def worker(company: ResolvedConfig) -> Iterator[None]:
    with standin_worker(company):
        yield


def start_refund(driver, wait, order_id: str, cents: str) -> None:
    """On the start form of `refund`: type the order and the amount, press Start."""
    wait.until(EC.presence_of_element_located((By.ID, "start_form")))
    for name, value in (("order_id", order_id), ("amount_cents", cents)):
        field = driver.find_element(By.ID, f"id_{name}")
        field.clear()
        field.send_keys(value)
    driver.find_element(By.NAME, "_start").click()


def test_an_approver_tells_two_refunds_apart_and_approves_the_one_they_checked(
        live_server, company, worker, browser, shots):
    wait = WebDriverWait(browser, 30, ignored_exceptions=(StaleElementReferenceException,))
    sign_in(browser, live_server.url, "alice", then="/admin/runs/run/start/")
    wait.until(EC.presence_of_element_located((By.LINK_TEXT, "refund"))).click()

    # A refund of 9 x 10^15 cents: refused on the amount field before any run exists.
    start_refund(browser, wait, "1002", "9000000000000000")
    error = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".field-amount_cents .errorlist")))
    assert error.text == ABOVE
    full_page(browser, shots / "refund-above-ceiling.png")
    assert not Run.objects.exists()

    # The real ones: 1,200.00 on order 1002, then 15.00 on order 1001.
    start_refund(browser, wait, "1002", "120000")
    wait.until(EC.presence_of_element_located((By.ID, "ledger")))
    browser.get(f"{live_server.url}/admin/runs/run/start/?workflow=refund")
    start_refund(browser, wait, "1001", "1500")
    wait.until(EC.presence_of_element_located((By.ID, "ledger")))
    wait_for(lambda: Approval.objects.filter(status="pending").count() == 2)

    # finance-lead follows the badge to the inbox.
    sign_in(browser, live_server.url, "finance-lead", then="/admin/")
    badge = wait.until(EC.presence_of_element_located((By.ID, "inbox-badge")))
    assert badge.text.lower() == "inbox 2"
    open_inbox(browser, wait)
    wait.until(EC.presence_of_element_located((By.ID, "result_list")))
    said = settled(lambda: [(
        r.find_element(By.CSS_SELECTOR, "td.field-title_link strong.sanoma-summary").text,
        r.find_element(By.CSS_SELECTOR, "td.field-amount .sanoma-money").text,
        r.find_element(By.CSS_SELECTOR, "td.field-started_by").text,
        r.find_element(By.CSS_SELECTOR, "td.field-run_column .sanoma-under").text,
        r.find_element(By.CSS_SELECTOR, "td.field-requested time").text) for r in inbox_rows(browser)])
    assert [row[:4] for row in said] == [("Refund 15.00 EUR on order 1001", "15.00 EUR", "alice", "refund"),
                                         ("Refund 1,200.00 EUR on order 1002", "1,200.00 EUR", "alice", "refund")]
    assert all(MOMENT.match(row[4]) for row in said), said  # asked when: the desk's one way of showing a moment
    full_page(browser, shots / "inbox-refunds.png")

    # The large one: its page says what it lets through, how much, and who asked.
    open_approval(browser, wait, "Refund 1,200.00 EUR on order 1002")
    assert browser.find_element(By.ID, "approval-summary").text == "Refund 1,200.00 EUR on order 1002"
    assert browser.find_element(By.ID, "approval-amount").text == "1,200.00 EUR"
    assert browser.find_element(By.ID, "approval-starter").text == "alice"
    assert browser.find_element(By.ID, "approval-workflow").text == "refund"
    full_page(browser, shots / "approval-refund.png")
    assert "is approved by finance-lead" in approve(browser, wait, "Order 1002 came back damaged: refund it all")

    # It leaves the inbox; the small one waits still.
    browser.find_element(By.LINK_TEXT, "Approvals inbox").click()
    wait.until(EC.presence_of_element_located((By.ID, "result_list")))
    assert settled(lambda: [r.find_element(By.CSS_SELECTOR, "strong.sanoma-summary").text
                            for r in inbox_rows(browser)]) == ["Refund 15.00 EUR on order 1001"]
    assert text_of(browser, "inbox-badge").lower() == "inbox 1"

    # Its run goes on and finishes: the run's page, reached from the approval, shows it land.
    browser.back()
    browser.back()
    wait.until(EC.presence_of_element_located((By.ID, "run-link"))).click()
    wait.until(lambda b: "run.finished" in b.find_element(By.ID, "ledger").text)
    big = Run.objects.get(input__amount_cents=120000)
    assert big.status == "finished" and (big.result or {}).get("amount_cents") == 120000


def test_a_superusers_inbox_is_what_the_api_answers_them(live_server, company, worker, browser, shots):
    """The README: a superuser decides only approvals addressed to them. The desk's inbox listed
    every approval to the superuser while `/api/approvals` and the badge said none."""
    for order_id, cents in (("1002", 120000), ("1001", 1500)):
        services.start(workflow="refund", input={"order_id": order_id, "amount_cents": cents}, started_by="alice")
    wait_for(lambda: Approval.objects.filter(status="pending").count() == 2)
    wait = WebDriverWait(browser, 30, ignored_exceptions=(StaleElementReferenceException,))

    answers = {}
    for who in ("admin", "finance-lead"):
        sign_in(browser, live_server.url, who, then="/admin/")
        wait.until(EC.presence_of_element_located((By.ID, "inbox-badge"))).click()
        wait.until(EC.presence_of_element_located((By.ID, "changelist")))
        desk = settled(lambda: [r.find_element(By.CSS_SELECTOR, "td.field-run_column a").text
                                for r in inbox_rows(browser)])
        badge = text_of(browser, "inbox-badge").lower()
        browser.save_screenshot(str(shots / f"inbox-{who}.png"))
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION="Token " + Token.objects.get_or_create(
            user=get_user_model().objects.get(username=who))[0].key)
        api = [row["run_id"] for row in client.get("/api/approvals").json()["results"]]
        answers[who] = (desk, api, badge)
    assert answers["admin"] == ([], [], "inbox")
    desk, api, badge = answers["finance-lead"]
    assert desk == api and sorted(desk) == sorted(Run.objects.values_list("id", flat=True)) and badge == "inbox 2"

