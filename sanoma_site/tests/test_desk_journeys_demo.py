"""The operator's journey on the demo's own company and people, in a real browser (headless Chromium
through Selenium): ops finds the runs of order 1001 by typing its tag in the runs list's search box,
opens the shipment the demo left in doubt, and settles it with what the carrier shows; the run
finishes and the carrier booked once. Shares its fixtures with the approver's journeys.
"""
from __future__ import annotations

import json

import pytest

from runs import services
from runs.config.resolution import ResolvedConfig
from runs.models import Run
from runs.tests import test_desk_journeys_approve as journeys
from runs.tests.browser_support import (
    EC,
    By,
    Keys,
    StaleElementReferenceException,
    WebDriverWait,
    full_page,
    settled,
    sign_in,
    wait_for,
)
from sanoma_site.demo import stage_in_doubt

# The approver's journeys' fixtures: the company on its fakes with the demo's people, a worker,
# one browser for the session, the screenshots' folder.
company = journeys.company
worker = journeys.worker
browser = journeys.browser
shots = journeys.shots
pytestmark = journeys.pytestmark


@pytest.fixture
def in_doubt(company: ResolvedConfig) -> Run:
    """The demo's shipment left in doubt (staged before the worker starts: this thread advances it)."""
    return stage_in_doubt(company)


def test_the_operator_finds_order_1001_by_its_tag_and_settles_the_shipment_in_doubt(
        live_server, company, in_doubt, worker, browser, shots):
    refund = services.start(workflow="refund", input={"order_id": "1001", "amount_cents": 1500}, started_by="alice")
    other = services.start(workflow="follow-up", input={"order_id": "1002"}, started_by="alice")
    wait_for(lambda: Run.objects.get(pk=in_doubt.id).waiting_for == "in_doubt")
    wait = WebDriverWait(browser, 30, ignored_exceptions=(StaleElementReferenceException,))

    sign_in(browser, live_server.url, "ops", then="/admin/runs/run/")
    search = wait.until(EC.presence_of_element_located((By.ID, "searchbar")))
    search.send_keys("order=1001", Keys.ENTER)
    wait.until(EC.url_contains("q="))
    listed = settled(lambda: browser.find_element(By.ID, "result_list").text)
    assert refund.id in listed and in_doubt.id in listed and other.id not in listed
    full_page(browser, shots / "runs-of-order-1001.png")

    browser.find_element(By.LINK_TEXT, in_doubt.id).click()
    wait.until(EC.presence_of_element_located((By.ID, "ledger")))
    full_page(browser, shots / "run-in-doubt.png")
    assert "In doubt about shop.shipment.book (step 2)" in browser.find_element(By.ID, "run-now").text
    [booked] = company.fakes["shop"].state["shipments"]  # what the carrier's dashboard shows
    assert "a word on a call in doubt" in browser.find_element(By.CSS_SELECTOR, ".field-waiting_for_words").text
    browser.find_element(By.CSS_SELECTOR, ".object-tools a[href$='/in-doubt/']").click()
    sent = wait.until(EC.presence_of_element_located((By.ID, "in-doubt-call"))).text
    assert "shop.shipment.book" in sent and "idempotency key" in sent
    browser.find_element(By.CSS_SELECTOR, "input[name=happened][value=yes]").click()
    browser.find_element(By.NAME, "output").send_keys(json.dumps(booked)[:-1])  # a JSON typo: refused, all kept
    browser.find_element(By.NAME, "note").send_keys("booked: seen in the carrier's dashboard")
    browser.find_element(By.CSS_SELECTOR, "input[type=submit][value=Settle]").click()
    assert "is not valid JSON" in wait.until(EC.presence_of_element_located((By.ID, "error-output"))).text
    assert browser.find_element(By.NAME, "note").get_attribute("value") == "booked: seen in the carrier's dashboard"
    browser.find_element(By.NAME, "output").clear()
    browser.find_element(By.NAME, "output").send_keys(json.dumps(booked))
    browser.find_element(By.CSS_SELECTOR, "input[type=submit][value=Settle]").click()
    message = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "ul.messagelist li")))
    assert "Settled the call" in message.text
    wait.until(lambda b: "run.finished" in b.find_element(By.ID, "ledger").text)
    assert Run.objects.get(pk=in_doubt.id).result == {"shipment_id": booked["shipment_id"],
                                                      "tracking": booked["tracking"]}
    assert [c["op"] for c in company.fakes["shop"].calls].count("shop.shipment.book") == 1
