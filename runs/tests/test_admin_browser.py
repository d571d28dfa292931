"""The approver's path through the admin in a real browser (headless Chromium through Selenium).

Needs Debian's `chromium` and `chromium-driver` and the `selenium` package; skipped with the reason
when one is missing. `SANOMA_SCREENSHOT_DIR` keeps the screenshots (default: the test's temp dir).
"""
from __future__ import annotations

import threading

from runs.approvals.services import decide
from runs.models import Approval, Run
from runs.tests import browser_support as support
from runs.tests.browser_support import (  # noqa: F401 (the names other browser tests import from here)
    BROWSER_TESTS,
    CHROMEDRIVER,
    CHROMIUM,
    EC,
    FLAGS,
    HAVE_SELENIUM,
    PASSWORD,
    By,
    StaleElementReferenceException,
    WebDriverWait,
    full_page,
    log_in,
    staff_user,
    text_of,
    worker_for,
)
from runs.tests.test_api import ask_flow, money_needs_bob, nap_flow, refund_flow

pytestmark = BROWSER_TESTS
browser = support.browser  # Chromium, as new (the other browser tests take it from here too)
shots = support.shots


def test_an_approver_approves_from_the_inbox_and_the_run_page_shows_it(live_server, engine_for, browser, shots):
    engine = engine_for(refund_flow, ask_flow, nap_flow, policy=money_needs_bob)
    staff_user("bob")
    run = engine.run("refund", {"order_id": "1", "amount": 10}, run_id="refund-1")
    assert run.status == "waiting"

    stop = threading.Event()
    worker = worker_for(engine, stop)
    worker.start()
    wait = WebDriverWait(browser, 20)
    try:
        log_in(browser, live_server.url, "bob", then="/admin/runs/approval/")

        # The inbox lists the held refund with what it lets through.
        wait.until(EC.presence_of_element_located((By.ID, "result_list")))
        inbox = browser.find_element(By.ID, "result_list").text
        assert "Refunds need bob" in inbox and "acme.order.refund" in inbox and '"amount": 10' in inbox
        browser.save_screenshot(str(shots / "inbox.png"))

        browser.find_element(By.LINK_TEXT, "Refunds need bob").click()
        wait.until(EC.presence_of_element_located((By.ID, "approve-button")))
        browser.find_element(By.ID, "id_note").send_keys("Checked the order: refund it")
        browser.save_screenshot(str(shots / "approval.png"))
        browser.find_element(By.ID, "approve-button").click()

        message = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "ul.messagelist li")))
        assert "Decided: approval-1 of run refund-1 is approved by bob" in message.text
        assert browser.find_element(By.ID, "approval-status").text == "approved"
        assert "Checked the order: refund it" in browser.find_element(By.ID, "decision-note").text
        browser.save_screenshot(str(shots / "decided.png"))

        browser.find_element(By.ID, "run-link").click()
        wait.until(EC.presence_of_element_located((By.ID, "ledger")))
        page = browser.find_element(By.ID, "content-main").text
        assert "approved" in page and "Checked the order: refund it" in page
        ledger = browser.find_element(By.ID, "ledger").text
        assert "approval.decided" in ledger and "run.finished" in ledger
        # The page is styled: the admin's stylesheet loaded.
        assert browser.find_element(By.ID, "header").value_of_css_property("background-color") != "rgba(0, 0, 0, 0)"
        full_page(browser, shots / "run.png")
    finally:
        stop.set()
        worker.join(timeout=10)

    assert Run.objects.get(pk="refund-1").status == "finished"
    assert Approval.objects.get(run_id="refund-1").decided_by == "bob"


def test_the_start_form_shows_the_servers_refusal_on_the_field(live_server, engine_for, alice, browser, shots):
    engine_for(refund_flow, ask_flow, nap_flow, policy=money_needs_bob)
    alice.is_staff = True
    alice.set_password(PASSWORD)
    alice.save()
    wait = WebDriverWait(browser, 20)
    log_in(browser, live_server.url, "alice", then="/admin/runs/run/start/")

    wait.until(EC.presence_of_element_located((By.LINK_TEXT, "refund"))).click()
    wait.until(EC.presence_of_element_located((By.ID, "start_form")))
    # The section is named once; the run id's rule is said whole.
    assert browser.find_element(By.CSS_SELECTOR, "div.breadcrumbs").text == "Home › Runs › Start a run › refund"
    assert "- _ . : @ ~." in browser.find_element(By.CSS_SELECTOR, ".field-_run_id").text
    browser.find_element(By.ID, "id_amount").send_keys("0")  # and no order id: both are said at once
    browser.find_element(By.NAME, "_start").click()

    error = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".field-amount .errorlist")))
    assert error.text == "Input should be greater than 0"
    assert browser.find_element(By.CSS_SELECTOR, ".field-order_id .errorlist").text == "This field is required."
    full_page(browser, shots / "start-error.png")
    assert not Run.objects.exists()
    browser.find_element(By.ID, "id_order_id").send_keys("1")

    amount = browser.find_element(By.ID, "id_amount")
    amount.clear()
    amount.send_keys("10")
    browser.find_element(By.NAME, "_start").click()
    wait.until(EC.presence_of_element_located((By.ID, "ledger")))
    assert "Started refund as run" in browser.find_element(By.CSS_SELECTOR, "ul.messagelist").text
    assert Run.objects.get().input == {"order_id": "1", "amount": 10}


def test_the_badge_leads_to_the_inbox_and_a_run_page_shows_the_decision_land_without_a_reload(
        live_server, engine_for, browser, shots):
    """The approver opens the run's page from the inbox badge; the decision is made elsewhere
    (through the API's service, as another tab would) and the page, never reloaded, shows the
    run finished."""
    engine = engine_for(refund_flow, ask_flow, nap_flow, policy=money_needs_bob)
    staff_user("bob")
    engine.run("refund", {"order_id": "1", "amount": 10}, run_id="refund-live")
    stop = threading.Event()
    worker = worker_for(engine, stop)
    worker.start()
    wait = WebDriverWait(browser, 20)
    try:
        log_in(browser, live_server.url, "bob", then="/admin/")
        badge = wait.until(EC.presence_of_element_located((By.ID, "inbox-badge")))
        assert badge.text.lower() == "inbox 1"  # the header shows its links in capitals
        badge.click()
        wait.until(EC.presence_of_element_located((By.ID, "result_list")))
        browser.get(f"{live_server.url}/admin/runs/run/refund-live/change/")
        wait.until(EC.presence_of_element_located((By.ID, "ledger")))
        browser.execute_script("window.sanomaMarker = 'same page'")
        assert "run.finished" not in text_of(browser, "ledger")
        decide(run_id="refund-live", decision="approve", by="bob", timeout=0)  # elsewhere: another tab, the API
        # The page swaps its content in place, so an element read a moment ago may be gone: look again.
        WebDriverWait(browser, 30, ignored_exceptions=(StaleElementReferenceException,)).until(
            lambda b: "run.finished" in b.find_element(By.ID, "ledger").text)
        assert browser.execute_script("return window.sanomaMarker") == "same page"  # never reloaded
        assert text_of(browser, "inbox-badge").lower() == "inbox"  # nothing waits for bob now
        full_page(browser, shots / "run-live.png")
        # At 800 px the page is still usable: nothing makes it scroll sideways.
        browser.set_window_size(800, 1100)
        browser.refresh()
        wait.until(EC.presence_of_element_located((By.ID, "ledger")))
        wide = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
        browser.save_screenshot(str(shots / "run-800.png"))
        assert wide[0] <= wide[1], f"the run page scrolls sideways at 800 px: {wide}"
    finally:
        stop.set()
        worker.join(timeout=10)
