"""An approver holding more than a hundred approvals, in a real browser (headless Chromium through
Selenium): the header's badge says "99+", she clicks it, the inbox's foot says "more than 100
approvals", and "next ›" walks the inbox by key, newest first, every approval once, to its last
page; "‹ newest" takes her back to the first. A page is 40 approvals here (the desk shows 100).
"""
from __future__ import annotations

import pytest

from runs.admin.approvals import ApprovalAdmin
from runs.tests import browser_support as support
from runs.tests.browser_support import (
    BROWSER_TESTS,
    EC,
    By,
    click_and_load,
    log_in,
    staff_user,
    until,
)
from runs.tests.test_pages2_inbox import asking, held

browser = support.browser
shots = support.shots

pytestmark = BROWSER_TESTS




def listed(driver) -> list[str]:
    return [a.text for a in driver.find_elements(By.CSS_SELECTOR, "#result_list td.field-run_column a")]



@pytest.fixture
def paged(monkeypatch):
    monkeypatch.setattr(ApprovalAdmin, "list_per_page", 40)


def test_the_badge_says_99_plus_and_the_inbox_pages_on_by_key(live_server, engine_for, paged, browser, shots):
    engine = engine_for(asking)
    staff_user("amy")
    ids = held(engine, 101)

    log_in(browser, live_server.url, "amy", then="/admin/")
    badge = until(browser, EC.visibility_of_element_located((By.CSS_SELECTOR, "#inbox-badge .sanoma-badge")))
    assert badge.text == "99+"
    assert browser.find_element(By.ID, "inbox-badge").text.casefold() == "inbox 99+"  # the header is in capitals
    browser.save_screenshot(str(shots / "inbox-badge-99-plus.png"))

    click_and_load(browser, browser.find_element(By.ID, "inbox-badge"))
    foot = browser.find_element(By.CSS_SELECTOR, "#inbox-pages .sanoma-count")
    assert foot.text == "more than 100 approvals"
    assert not browser.find_elements(By.LINK_TEXT, "‹ newest")
    seen = listed(browser)
    assert len(seen) == 40 and seen[0] == ids[-1]
    browser.save_screenshot(str(shots / "inbox-first-page.png"))

    pages = 1
    while browser.find_elements(By.LINK_TEXT, "next ›"):
        click_and_load(browser, browser.find_element(By.LINK_TEXT, "next ›"))
        assert "after=" in browser.current_url
        assert browser.find_element(By.CSS_SELECTOR, "#inbox-pages .sanoma-count").text == "more than 100 approvals"
        seen += listed(browser)
        pages += 1
    assert pages == 3 and len(listed(browser)) == 21
    assert seen == ids[::-1]  # every approval once, newest first
    browser.save_screenshot(str(shots / "inbox-last-page.png"))

    click_and_load(browser, browser.find_element(By.LINK_TEXT, "‹ newest"))
    assert "after=" not in browser.current_url and listed(browser)[0] == ids[-1]
