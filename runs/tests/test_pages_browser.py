"""The runs list counted to its bound, as an operator pages through it in a real browser (headless
Chromium through Selenium): filtered by status from the sidebar, its foot says "more than N runs"
while the runs were not all counted, "next ›" and "‹ previous" walk the pages to the last one (where
the count is exact), and "Show counts" gives each status its bounded count.

The bound is 10,000 (1,000 for the sidebar's counts); here it is 3, and a page is 2 runs, so seven
runs parked by the engine go past it.
"""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from runs import selectors
from runs.admin import run_list
from runs.admin.runs import RunAdmin
from runs.models import Run, RunStatus
from runs.tests import browser_support as support
from runs.tests.browser_support import (
    BROWSER_TESTS,
    EC,
    By,
    click_and_load,
    log_in,
    until,
)
from runs.tests.test_api import nap_flow
from runs.tests.test_desk_journeys_lists import operator

browser = support.browser
shots = support.shots

pytestmark = BROWSER_TESTS



@pytest.fixture
def bounded(monkeypatch):
    monkeypatch.setattr(selectors, "COUNT_BOUND", 3)
    monkeypatch.setattr(run_list, "FACET_BOUND", 3)
    monkeypatch.setattr(RunAdmin, "list_per_page", 2)



def foot(driver) -> str:
    return driver.find_element(By.CSS_SELECTOR, "p.paginator .sanoma-count").text


def listed(driver) -> list[str]:
    return [cell.text for cell in driver.find_elements(By.CSS_SELECTOR, "#result_list tbody th a")]



def test_an_operator_filters_by_status_and_pages_past_the_count_to_the_last_page(
        live_server, engine_for, bounded, browser, shots):
    engine = engine_for(nap_flow)
    operator("olga")
    now = timezone.now()
    for n in range(7):
        run = engine.run("nap", {}, run_id=f"nap-{n}")
        assert run.status == RunStatus.WAITING
        Run.objects.filter(pk=run.id).update(created_at=now - timedelta(minutes=10 - n))
    engine.run("nap", {}, run_id="other")
    Run.objects.filter(pk="other").update(status=RunStatus.FAILED, created_at=now)

    log_in(browser, live_server.url, "olga", then="/admin/runs/run/")
    until(browser, EC.presence_of_element_located((By.ID, "result_list")))
    assert foot(browser) == "more than 3 runs" and listed(browser) == ["other", "nap-6"]

    status = browser.find_element(By.XPATH, "//details[@data-filter-title='status']//a[normalize-space()='Waiting']")
    click_and_load(browser, status)
    assert "status__exact=waiting" in browser.current_url
    assert listed(browser) == ["nap-6", "nap-5"] and foot(browser) == "more than 3 runs"
    said = browser.find_element(By.CSS_SELECTOR, "#changelist-search .sanoma-result-count").text
    assert said == "more than 3 results (more than 3 total)"
    assert not browser.find_elements(By.LINK_TEXT, "‹ previous")
    assert not browser.find_elements(By.LINK_TEXT, "Show all")  # it would read every run
    browser.save_screenshot(str(shots / "runs-list-bounded-first.png"))

    seen = listed(browser)
    for counted in ("more than 5 runs", "7 runs", "7 runs"):
        click_and_load(browser, browser.find_element(By.LINK_TEXT, "next ›"))
        assert foot(browser) == counted
        seen += listed(browser)
    assert seen == [f"nap-{n}" for n in range(6, -1, -1)]  # every waiting run once, newest first
    assert not browser.find_elements(By.LINK_TEXT, "next ›")  # the last page: counted to its end
    assert "p=4" in browser.current_url
    browser.save_screenshot(str(shots / "runs-list-bounded-last.png"))

    click_and_load(browser, browser.find_element(By.LINK_TEXT, "‹ previous"))
    assert listed(browser) == ["nap-2", "nap-1"] and "p=3" in browser.current_url

    click_and_load(browser, browser.find_element(By.PARTIAL_LINK_TEXT, "Show counts"))
    sidebar = browser.find_element(By.ID, "changelist-filter").text
    assert "Waiting (more than 3)" in sidebar and "Failed (1)" in sidebar and "Finished (0)" in sidebar
    browser.save_screenshot(str(shots / "runs-list-bounded-counts.png"))
