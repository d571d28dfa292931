"""The desk's Limits page in a real browser (headless Chromium through Selenium): an operator sees the
limits a company declares, changes one as a person does (the add form), and the next call keeps to
the new limit; a person on the desk who is no operator sees the limits and may not change them.

Needs Debian's `chromium` and `chromium-driver` and the `selenium` package; skipped with the reason
when one is missing. `SANOMA_SCREENSHOT_DIR` keeps the screenshots (default: the test's temp dir).
"""
from __future__ import annotations

import time

import pytest

from runs.config.registry import set_config
from runs.config.resolution import SanomaConfig
from runs.limits import gate, services
from runs.limits.models import LimitOverride
from runs.limits.tests.test_limits_processes import Site, meter_server
from runs.limits.tests.test_waiting import SEND, WORKFLOWS, gauge, meter
from runs.models import Run, RunStatus
from runs.testing import make_user, resolve_on_fakes
from runs.tests import browser_support as support
from runs.tests.browser_support import (
    BROWSER_TESTS,
    EC,
    By,
    StaleElementReferenceException,
    WebDriverWait,
    click_and_load,
    log_in,
)
from runs.tests.browser_support import staff_user as _staff_user

browser = support.browser
shots = support.shots

pytestmark = BROWSER_TESTS
LANDS = 45


@pytest.fixture
def company(db):
    make_user("alice", perms=["runs.start_workflow"])
    set_config(resolve_on_fakes(SanomaConfig(connectors=[meter, gauge], workflows=WORKFLOWS)))
    yield
    set_config(None)


def until(driver, condition, seconds: float = LANDS):
    return WebDriverWait(driver, seconds, ignored_exceptions=(StaleElementReferenceException,)).until(condition)


def listed(driver) -> list[str]:
    return [cell.text for cell in driver.find_elements(By.CSS_SELECTOR, "#result_list tbody th a")]


def in_force(driver) -> dict[str, str]:
    table = until(driver, EC.presence_of_element_located((By.ID, "limits-in-force")))
    rows = {}
    for row in table.find_elements(By.CSS_SELECTOR, "tbody tr"):
        cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
        rows[cells[0]] = cells[1]
    return rows


def test_an_operator_changes_a_limit_from_the_desk_and_the_next_call_keeps_to_it(live_server, browser, shots,
                                                                                 company):
    olga = _staff_user("olga")
    olga.is_superuser = True
    olga.save()
    log_in(browser, live_server.url, "olga", then="/admin/")
    until(browser, EC.element_to_be_clickable((By.LINK_TEXT, "Limits"))).click()
    rows = in_force(browser)
    assert rows["meter"] == "30/min" and rows["gauge.ping.single"] == "1 at once"
    assert rows["gauge.ping.keyed"] == "6/min, per account"
    browser.save_screenshot(str(shots / "limits-before.png"))

    until(browser, EC.element_to_be_clickable((By.CSS_SELECTOR, ".object-tools a.addlink"))).click()
    until(browser, EC.presence_of_element_located((By.NAME, "target"))).send_keys("meter")
    browser.find_element(By.NAME, "rate").send_keys("5/fortnight")  # slips first: refused, nothing changes
    browser.find_element(By.NAME, "concurrency").send_keys("-1")
    browser.find_element(By.NAME, "_save").click()
    until(browser, EC.presence_of_element_located((By.CSS_SELECTOR, ".errornote, .errorlist")))

    def field_error(name: str) -> str:  # the error Django shows in the field's own row
        return browser.find_element(By.CSS_SELECTOR, f".field-{name} .errorlist").text

    assert "rate '5/fortnight': unit 'fortnight' must be one of s, min, h, day" in field_error("rate")
    assert field_error("concurrency") == ("concurrency '-1': give a whole number of calls at once from 1 to 10,000, "
                                          "or 0 or off to lift it")
    assert not LimitOverride.objects.exists()
    browser.save_screenshot(str(shots / "limits-refused.png"))
    rate = browser.find_element(By.NAME, "rate")
    rate.clear()
    rate.send_keys("2/s")
    concurrency = browser.find_element(By.NAME, "concurrency")
    concurrency.clear()
    concurrency.send_keys("3")
    browser.find_element(By.NAME, "_save").click()
    until(browser, EC.presence_of_element_located((By.CSS_SELECTOR, ".messagelist .success")))
    rows = in_force(browser)
    assert rows["meter"] == "2/s, 3 at once"
    browser.save_screenshot(str(shots / "limits-after.png"))
    made = LimitOverride.objects.get(target="meter")
    assert (made.rate, made.concurrency, made.set_by) == ("2/s", 3, "olga")
    # The next call sees it, without a restart.
    [applied] = gate.applied_limits(SEND, {})
    assert (str(applied.rate), applied.concurrency) == ("2/s", 3)

    # A concurrency of 0 lifts it (as off does), and the form shows it so.
    until(browser, EC.element_to_be_clickable((By.LINK_TEXT, "meter"))).click()
    concurrency = until(browser, EC.presence_of_element_located((By.NAME, "concurrency")))
    concurrency.clear()
    concurrency.send_keys("0")
    browser.find_element(By.NAME, "_save").click()
    until(browser, EC.presence_of_element_located((By.CSS_SELECTOR, ".messagelist .success")))
    assert in_force(browser)["meter"] == "2/s"
    assert LimitOverride.objects.get(target="meter").concurrency == 0
    until(browser, EC.element_to_be_clickable((By.LINK_TEXT, "meter"))).click()
    assert until(browser, EC.presence_of_element_located((By.NAME, "concurrency"))).get_attribute("value") == "off"


def test_a_person_who_is_no_operator_sees_the_limits_and_cannot_change_them(live_server, browser, company):
    _staff_user("vera")
    log_in(browser, live_server.url, "vera", then="/admin/runs/limitoverride/")
    assert in_force(browser)["meter"] == "30/min"
    assert not browser.find_elements(By.CSS_SELECTOR, ".object-tools a.addlink")
    browser.get(f"{live_server.url}/admin/runs/limitoverride/add/")
    assert "You may not open this page" in browser.title  # the desk's 403 page


@pytest.mark.process
def test_an_operator_finds_the_runs_waiting_for_a_limit_and_raising_it_lets_them_go(live_server, browser, shots,
                                                                                    tmp_path):
    """With a real worker: runs waiting their turns under 1/min are listed by the runs list's "waiting
    for: a rate or concurrency limit"; the operator raises the limit on the Limits page, and they
    finish within seconds, not at the turns the old limit gave them (a minute apart)."""
    site = Site(tmp_path)
    set_config(site.config)  # the desk knows the worker's company
    try:
        olga = _staff_user("olga")
        olga.is_superuser = True
        olga.save()
        services.set_override(target="meter", rate="1/min", by="olga")
        with meter_server(gated=False) as server:
            site.start_workers(1, METER_URL=server.url)
            runs = [site.start("pings", {"calls": 1, "account": f"w{i}"}) for i in range(4)]
            ids = [r.id for r in runs]

            def waiting() -> set[str]:
                return set(Run.objects.filter(id__in=ids, status=RunStatus.WAITING,
                                              waiting_for="rate limit of meter").values_list("id", flat=True))

            site.workers[0].wait_for(lambda: len(waiting()) == 3, within=LANDS, progress=lambda: len(waiting()),
                                     what="three runs to wait for their turns under 1/min")
            other = site.start("pings", {"calls": 1})  # not waiting for a limit: queued, never listed
            Run.objects.filter(pk=other.id).update(status=RunStatus.WAITING, waiting_for="sleep")
            log_in(browser, live_server.url, "olga", then="/admin/runs/run/")
            filters = until(browser, EC.presence_of_element_located((By.ID, "changelist-filter")))
            link = filters.find_element(By.LINK_TEXT, "a rate or concurrency limit")
            click_and_load(browser, link)
            assert "waiting_for=limit" in browser.current_url
            assert set(listed(browser)) == waiting() and len(listed(browser)) == 3
            browser.save_screenshot(str(shots / "runs-waiting-for-a-limit.png"))

            browser.get(f"{live_server.url}/admin/runs/limitoverride/")
            until(browser, EC.element_to_be_clickable((By.LINK_TEXT, "meter"))).click()
            rate = until(browser, EC.presence_of_element_located((By.NAME, "rate")))
            assert rate.get_attribute("value") == "1/min"
            rate.clear()
            rate.send_keys("100/s")
            raised = time.monotonic()
            browser.find_element(By.NAME, "_save").click()
            said = until(browser, EC.presence_of_element_located((By.CSS_SELECTOR, ".messagelist .success"))).text
            assert said.count("limit") == 1 and "“meter”" in said, said  # no "limit ... “limit of meter”"
            assert in_force(browser)["meter"] == "100/s, 2 at once"
            site.finish(runs)
            took = time.monotonic() - raised
            assert len(server.requests_to("POST", "/v1/pings")) == 4
        browser.get(f"{live_server.url}/admin/runs/run/?waiting_for=limit")
        until(browser, EC.presence_of_element_located((By.ID, "changelist")))
        assert listed(browser) == []
        print(f"\nthe waiting runs finished {took:.2f} s after the desk's save (the old limit's next turn was a "
              "minute away)")
        assert took < 50  # the second run's old turn was 64 s after the first call
    finally:
        site.cleanup()
        set_config(None)
