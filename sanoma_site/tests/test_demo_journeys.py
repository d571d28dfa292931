"""The desk's journeys on the demo's own company and people, in a real browser (headless Chromium
through Selenium): the demo set up as `./demo` sets it up (sanoma_site/tests/demo_desk.py), then
each person clicks, types and waits for the page as they would, and never posts to a URL the page
does not lead to. One demo per test: each test is one person's (or a hand-over between people's)
journey through several pages.

- alice starts a refund with values the form refuses, then with good ones; finance-lead, with the
  runs list and the run's page open in tabs of their own, approves it from the inbox and sees both
  follow it to its end without a reload; ops forks it, seeing first what is done again.
- alice starts an await-shipment and sends the warehouse's message from its page; she cancels the
  demo's refund, saying why, and it leaves finance-lead's inbox.
- ops drifts, reads the plan and applies; the staff roles wait for sam, who approves them from his
  inbox; the apply finishes.
- At 1200 and 1280 px, with the navigation sidebar open, no list of the desk scrolls sideways.
- A relative moment ("just now") does not stay as it was while the page sits.

Needs Debian's `chromium` and `chromium-driver` and the `selenium` package; skipped with the reason
when one is missing. `SANOMA_SCREENSHOT_DIR` keeps the screenshots.
"""
from __future__ import annotations

import pytest

from runs.models import Approval, Run, RunMessage
from runs.tests import browser_support as support
from runs.tests.browser_support import (
    BROWSER_TESTS,
    EC,
    By,
    StaleElementReferenceException,
    WebDriverWait,
    approve,
    approve_from_inbox,
    full_page,
    inbox_rows,
    open_approval,
    open_inbox,
    page_fits,
    settled,
    sign_in,
    text_of,
    wait_for,
)
from sanoma_site.tests import demo_desk
from sanoma_site.tests.demo_desk import Demo

browser = support.browser
shots = support.shots
demo = demo_desk.demo
demo_worker = demo_desk.demo_worker
pytestmark = BROWSER_TESTS

WAIT = 60  # seconds: a live page reads itself again every 3 s; a loaded 2-core machine is slow


def waiter(driver, timeout: float = WAIT):
    return WebDriverWait(driver, timeout, ignored_exceptions=(StaleElementReferenceException,))


def mark_page(driver) -> None:
    """Leave a mark on this page: it is gone if the page is loaded again."""
    driver.execute_script("window.sanomaSamePage = 'yes'")


def same_page(driver) -> bool:
    return driver.execute_script("return window.sanomaSamePage") == "yes"


def said(driver) -> str:
    """The page's messages (Django's message list), waited for."""
    return waiter(driver).until(EC.presence_of_element_located((By.CSS_SELECTOR, "ul.messagelist"))).text


def fill(driver, **values: str) -> None:
    for name, value in values.items():
        field_ = driver.find_element(By.ID, f"id_{name}")
        field_.clear()
        field_.send_keys(value)


def open_from_sidebar(driver, label: str) -> None:
    """The desk's link to a page: in the navigation sidebar, or on the home page's list of apps."""
    links = driver.find_elements(By.XPATH, f"//nav[@id='nav-sidebar']//a[normalize-space(text())='{label}']") or \
        driver.find_elements(By.XPATH, f"//div[@id='content-main']//th/a[normalize-space(text())='{label}']")
    assert links, f"no link {label!r} on {driver.current_url}"
    links[0].click()


def run_row_status(driver, run_id: str) -> str:
    """The status cell of a run's row in the runs list."""
    row = driver.find_element(By.XPATH, f"//table[@id='result_list']//tr[.//a[normalize-space(text())='{run_id}']]")
    return row.find_element(By.CSS_SELECTOR, "td.field-status_badge, td.field-status").text


def run_id_of_page(driver) -> str:
    return driver.current_url.rstrip("/").split("/")[-2]


def test_a_refund_started_approved_from_the_inbox_and_forked_on_the_demo(
        live_server, demo: Demo, demo_worker, browser, shots):
    site = live_server.url
    wait = waiter(browser)

    # alice: the start form refuses a refund far above its ceiling on the field, and a missing order.
    sign_in(browser, site, "alice", then="/admin/")
    open_from_sidebar(browser, "Runs")
    wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, "ul.object-tools a[href$='/start/']"))).click()
    wait.until(EC.element_to_be_clickable((By.LINK_TEXT, "refund"))).click()
    wait.until(EC.presence_of_element_located((By.ID, "start_form")))
    fill(browser, order_id="", amount_cents="9000000000000000")
    browser.find_element(By.NAME, "_start").click()
    error = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".field-amount_cents .errorlist")))
    assert "is above the ceiling of 10,000.00 EUR that shop.order.refund declares" in error.text
    assert browser.find_element(By.CSS_SELECTOR, ".field-order_id .errorlist").text
    before = Run.objects.count()
    # Then good values: the run starts, held for finance-lead.
    fill(browser, order_id="1002", amount_cents="4200")
    browser.find_element(By.NAME, "_start").click()
    wait.until(EC.presence_of_element_located((By.ID, "ledger")))
    assert "Started refund as run" in said(browser)
    refund_id = run_id_of_page(browser)
    assert Run.objects.count() == before + 1
    wait_for(lambda: Approval.objects.filter(run_id=refund_id, status="pending").exists())

    # finance-lead: the runs list in this tab, the refund's page in a second, the inbox in a third.
    sign_in(browser, site, "finance-lead", then="/admin/")
    open_from_sidebar(browser, "Runs")
    wait.until(EC.presence_of_element_located((By.ID, "result_list")))
    list_tab = browser.current_window_handle
    assert "waiting" in settled(lambda: run_row_status(browser, refund_id)).lower()
    mark_page(browser)

    browser.switch_to.new_window("tab")
    run_tab = browser.current_window_handle
    browser.get(f"{site}/admin/runs/run/")  # a new tab on the runs list; the refund is clicked from it
    wait.until(EC.element_to_be_clickable((By.LINK_TEXT, refund_id))).click()
    wait.until(EC.presence_of_element_located((By.ID, "run-now")))
    assert "run.finished" not in text_of(browser, "ledger")
    mark_page(browser)

    browser.switch_to.new_window("tab")
    browser.get(f"{site}/admin/")
    open_inbox(browser, wait)
    summary = "Refund 42.00 EUR on order 1002"
    assert summary in settled(lambda: [r.text for r in inbox_rows(browser)])[0] or summary in browser.page_source
    open_approval(browser, wait, summary)
    assert browser.find_element(By.ID, "approval-starter").text == "alice"
    assert "is approved by finance-lead" in approve(browser, wait, "Order 1002 checked: refund it")

    # The run's page, never reloaded, follows the run to its end; so does the runs list.
    browser.switch_to.window(run_tab)
    wait.until(lambda b: "run.finished" in b.find_element(By.ID, "ledger").text)
    assert text_of(browser, "run-now").startswith("Finished ")
    assert same_page(browser)
    full_page(browser, shots / "demo-refund-finished.png")
    browser.switch_to.window(list_tab)
    wait.until(lambda b: "finished" in run_row_status(b, refund_id).lower())
    assert same_page(browser)

    # ops forks the finished refund from its last step, seeing first what is done again.
    sign_in(browser, site, "ops", then="/admin/")
    open_from_sidebar(browser, "Runs")
    wait.until(EC.element_to_be_clickable((By.LINK_TEXT, refund_id))).click()
    wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, "ul.object-tools a[href$='/fork/']"))).click()
    steps = wait.until(EC.presence_of_element_located((By.ID, "fork-steps")))
    forks = steps.find_elements(By.PARTIAL_LINK_TEXT, "Fork from step")
    assert len(forks) >= 2
    forks[0].click()  # from the first step: everything is done again, the money too
    warning = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".plan-effects")))
    assert "money" in warning.text and "send" in warning.text
    browser.find_element(By.LINK_TEXT, "No, choose another step").click()
    steps = wait.until(EC.presence_of_element_located((By.ID, "fork-steps")))
    steps.find_elements(By.PARTIAL_LINK_TEXT, "Fork from step")[-1].click()  # the last: the refund is not paid again
    warning = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".plan-effects")))
    assert "money" not in warning.text
    assert "shop.order.refund" in browser.find_element(By.CSS_SELECTOR, "table.plan-reused tbody").text
    full_page(browser, shots / "demo-fork-confirm.png")
    refunds = len(demo.shop.state["refunds"])
    browser.find_element(By.ID, "confirm-fork").click()
    assert f"Forked {refund_id} from step" in said(browser)
    fork_id = f"{refund_id}~1"
    assert browser.current_url.endswith(f"/admin/runs/run/{fork_id}/change/")
    wait.until(lambda b: "run.finished" in b.find_element(By.ID, "ledger").text)
    assert len(demo.shop.state["refunds"]) == refunds  # as the page said: no second refund
