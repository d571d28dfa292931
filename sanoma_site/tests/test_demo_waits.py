"""A run's waits on the demo, read by a person in a real browser (headless Chromium through Selenium):
a moment still to come reads "in 1 minute", never "just now", on the server and while the page
sits; a message on a topic the run does not wait for is kept, and the page says plainly that the
run waits for another topic (the one meant, when close); after such a message woke the run and it
went back to waiting, its sentence still says since when it waits.

Needs Debian's `chromium` and `chromium-driver` and the `selenium` package; skipped with the reason
when one is missing.
"""
from __future__ import annotations

import time
from datetime import datetime

from runs.models import Run, RunStatus, Step, StepKind
from runs.tests import browser_support as support
from runs.tests.browser_support import BROWSER_TESTS, EC, By, sign_in, text_of, wait_for
from sanoma_site.tests import demo_desk
from sanoma_site.tests.demo_desk import Demo
from sanoma_site.tests.test_demo_journeys import fill, open_from_sidebar, run_id_of_page, said, waiter

browser = support.browser
shots = support.shots
demo = demo_desk.demo
demo_worker = demo_desk.demo_worker
pytestmark = BROWSER_TESTS


def start(browser, workflow: str, **values: str) -> str:
    """From the runs list's Start button and the workflow's form, as alice does; the new run's id."""
    wait = waiter(browser)
    open_from_sidebar(browser, "Runs")
    wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, "ul.object-tools a[href$='/start/']"))).click()
    wait.until(EC.element_to_be_clickable((By.LINK_TEXT, workflow))).click()
    wait.until(EC.presence_of_element_located((By.ID, "start_form")))
    fill(browser, **values)
    browser.find_element(By.NAME, "_start").click()
    wait.until(EC.presence_of_element_located((By.ID, "ledger")))
    return run_id_of_page(browser)


def now_said(browser) -> str:
    return " ".join(text_of(browser, "run-now").replace("\xa0", " ").split())


def test_a_sleep_still_to_come_reads_in_1_minute_and_stays_so_while_the_page_sits(
        live_server, demo: Demo, demo_worker, browser, shots):
    site = live_server.url
    wait = waiter(browser)
    sign_in(browser, site, "alice", then="/admin/")
    run_id = start(browser, "follow-up", order_id="1002", after_seconds="55")
    wait.until(lambda b: "Asleep until" in b.find_element(By.ID, "run-now").text)
    assert "(in 1 minute)" in now_said(browser), now_said(browser)
    time.sleep(6)  # the page's script says its moments again every 5 s
    assert Run.objects.get(pk=run_id).status == RunStatus.WAITING
    assert "(in 1 minute)" in now_said(browser) and "just now" not in now_said(browser), now_said(browser)
    browser.save_screenshot(str(shots / "asleep-in-1-minute.png"))
    # The steps table shows the sleep's end as a moment beside its milliseconds.
    sleep_row = browser.find_element(By.XPATH, "//tr[td[contains(@class, 'field-kind')][normalize-space()='Sleep']]")
    until = sleep_row.find_element(By.CSS_SELECTOR, "td.field-output_json .sanoma-until").text
    assert until.startswith("until 20"), until
    assert until.endswith(" UTC"), until


def test_a_message_on_a_topic_the_run_does_not_wait_for_is_said_so_and_its_wait_keeps_its_since(
        live_server, demo: Demo, demo_worker, browser, shots):
    site = live_server.url
    wait = waiter(browser)
    sign_in(browser, site, "alice", then="/admin/")
    run_id = start(browser, "await-shipment", order_id="1002")
    wait_for(lambda: Run.objects.get(pk=run_id).waiting_for == "message")
    began = Step.objects.get(run_id=run_id, kind=StepKind.WAIT).created_at
    time.sleep(2)  # the message comes later than the wait began

    # A typo in the topic: the message is kept, and the page says what the run waits for.
    wait.until(lambda b: "Waiting for a message" in b.find_element(By.ID, "run-now").text)
    wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, "#send-message summary"))).click()
    topic = browser.find_element(By.CSS_SELECTOR, "#send-message input[name=topic]")
    topic.clear()
    topic.send_keys("shiped")
    payload = browser.find_element(By.CSS_SELECTOR, "#send-message input[name=payload]")
    payload.clear()
    payload.send_keys('{"carrier": "posti", "tracking": "POSTI1002"}')
    woke = Run.objects.get(pk=run_id).updated_at
    browser.find_element(By.ID, "send-message-button").click()
    message = said(browser)
    assert f"Sent to {run_id} on “shiped”" in message
    assert "The run waits for a message on “shipped”: it will not read “shiped” now" in message, message
    assert "Did you mean “shipped”?" in message, message
    browser.save_screenshot(str(shots / "message-on-another-topic.png"))

    # The message woke the run; it waits again for "shipped", since it first began to.
    wait_for(lambda: Run.objects.get(pk=run_id).updated_at > woke
             and Run.objects.get(pk=run_id).waiting_for == "message")
    browser.refresh()
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#run-now time")))
    assert "Waiting for a message on “shipped”" in text_of(browser, "run-now")
    since = browser.find_elements(By.CSS_SELECTOR, "#run-now time")[-1].get_attribute("datetime")  # after "until"
    assert datetime.fromisoformat(since) == began, (since, began, woke)
