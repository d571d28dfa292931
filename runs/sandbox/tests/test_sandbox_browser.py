"""A sandbox run from the desk in a real browser (headless Chromium through Selenium), on the
example company (`company/`) on its REAL drivers: alice clicks "Try in sandbox" on the runs list,
chooses the refund and one of its scenarios, starts it, and sees the run marked as a sandbox;
finance-lead finds its approval marked in the inbox and approves it; alice then sees the scenario's
checks pass on the run's page. The shop's real driver (no SHOP_API_URL) is never called: a call
reaching it would fail the run.

Needs Debian's `chromium` and `chromium-driver` and the `selenium` package; skipped with the reason
when one is missing. `SANOMA_SCREENSHOT_DIR` keeps the screenshots.
"""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from runs.config.resolution import ResolvedConfig
from runs.models import Run
from runs.sandbox.models import SandboxRun
from runs.tests import browser_support as support
from runs.tests.browser_support import (
    BROWSER_TESTS,
    EC,
    By,
    StaleElementReferenceException,
    WebDriverWait,
    approve_from_inbox,
    full_page,
    sign_in,
    text_of,
    wait_for,
)

browser = support.browser
shots = support.shots
pytestmark = BROWSER_TESTS

APPROVES = "finance approves a refund"


@pytest.fixture
def real_company(transactional_db) -> Iterator[ResolvedConfig]:
    """The example company on its real drivers: the shop's needs SHOP_API_URL, which is not set."""
    with support.example_company() as config:
        yield config


@pytest.fixture
def worker(real_company: ResolvedConfig) -> Iterator[None]:
    with support.standin_worker(real_company):
        yield


def test_an_operator_starts_a_sandbox_run_from_the_desk_and_sees_its_checks(
        live_server, real_company, worker, browser, shots):
    wait = WebDriverWait(browser, 30, ignored_exceptions=(StaleElementReferenceException,))
    sign_in(browser, live_server.url, "alice", then="/admin/runs/run/")
    wait.until(EC.element_to_be_clickable((By.ID, "sandbox-link"))).click()
    wait.until(EC.element_to_be_clickable((By.LINK_TEXT, "refund"))).click()
    choice = wait.until(EC.element_to_be_clickable(
        (By.CSS_SELECTOR, f'input[name="_scenario"][value="{APPROVES}"]')))
    full_page(browser, shots / "sandbox-choose-scenario.png")
    choice.click()
    browser.find_element(By.ID, "sandbox-start").click()

    # The new run's page: marked a sandbox, naming its scenario; it waits for finance.
    wait.until(EC.presence_of_element_located((By.ID, "sandbox")))
    run = Run.objects.get()
    assert run.id.startswith("sandbox-refund-") and SandboxRun.objects.filter(pk=run.id).exists()
    assert text_of(browser, "sandbox-scenario") == APPROVES
    assert "sandbox" in text_of(browser, "live-breadcrumbs")
    assert "evaluated when the run ends" in text_of(browser, "sandbox")
    wait_for(lambda: Run.objects.get(pk=run.id).waiting_for == "approval")

    # finance-lead: the inbox marks the approval as a sandbox run's; approved like any other.
    support.sign_in(browser, live_server.url, "finance-lead", then="/admin/runs/approval/")
    row = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#result_list tbody tr")))
    assert "SANDBOX" in row.text.upper() and run.id in row.text
    full_page(browser, shots / "sandbox-inbox.png")
    def looking(driver) -> None:  # the approval's own page says it is a sandbox run's
        assert "A sandbox run asks this" in text_of(driver, "approval-sandbox")

    said = approve_from_inbox(browser, live_server.url, "finance-lead", "Refund 15.00 EUR on order 1001", "fine",
                              looking=looking)
    assert "approved" in said.lower(), said
    wait_for(lambda: Run.objects.get(pk=run.id).status == "finished")

    # alice opens the run again: the scenario's checks, each passing.
    sign_in(browser, live_server.url, "alice", then=f"/admin/runs/run/{run.id}/change/")
    summary = wait.until(EC.presence_of_element_located((By.ID, "sandbox-summary")))
    assert summary.text == "The scenario's checks: 9 passed, 0 failed."
    checks = browser.find_elements(By.CSS_SELECTOR, "#sandbox-checks li")
    assert len(checks) == 9 and all(c.get_attribute("data-ok") == "true" for c in checks)
    assert checks[0].text.startswith("PASS Then order 1001 was refunded 1500") or \
        checks[0].text.startswith("pass Then order 1001 was refunded 1500"), checks[0].text
    full_page(browser, shots / "sandbox-run-checks.png")
    # The runs list shows its badge.
    browser.get(f"{live_server.url}/admin/runs/run/?sandbox=yes")
    badge = wait.until(EC.presence_of_element_located(
        (By.CSS_SELECTOR, "td.field-sandbox_badge .sanoma-sandbox-badge")))
    assert badge.text.lower() == "sandbox"


def test_a_viewer_reads_the_scenarios_but_has_no_start_button(live_server, real_company, browser):
    # vera (viewers) sees every run and changes nothing: the sandbox page shows her the scenarios,
    # and says why there is nothing to press.
    wait = WebDriverWait(browser, 30, ignored_exceptions=(StaleElementReferenceException,))
    sign_in(browser, live_server.url, "vera", then="/admin/runs/run/")
    wait.until(EC.element_to_be_clickable((By.ID, "sandbox-link"))).click()
    wait.until(EC.element_to_be_clickable((By.LINK_TEXT, "refund"))).click()
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f'input[name="_scenario"][value="{APPROVES}"]')))
    assert browser.find_elements(By.ID, "sandbox-start") == []
    assert "may read these scenarios, but not start refund" in text_of(browser, "sandbox-may-not-start")
    assert not Run.objects.exists()
