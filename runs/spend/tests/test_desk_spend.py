"""The money at risk in a held refund, as finance-lead meets it in a real browser (headless Chromium)
on the example company: 900.00 EUR refunded today, then a refund of 200.00 EUR that would take the
day past its 1,000.00 EUR budget (company/policies/budget.cedar). The inbox row shows the amount
with the day's refunds beside the budget; the approval's page and the run's page say it too.

Needs Debian's `chromium` and `chromium-driver` and the `selenium` package; skipped with the reason
when one is missing."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from runs import services
from runs.approvals import services as approvals
from runs.config.resolution import ResolvedConfig
from runs.engine.drain import drain
from runs.models import Approval
from runs.tests import browser_support as support
from runs.tests.browser_support import (
    BROWSER_TESTS,
    EC,
    By,
    StaleElementReferenceException,
    WebDriverWait,
    full_page,
    inbox_rows,
    open_approval,
    open_inbox,
    settled,
    sign_in,
    text_of,
)

browser = support.browser
shots = support.shots
pytestmark = BROWSER_TESTS

SPENT = ("900.00 EUR spent today through shop.order.refund and stripe.refund.create, "
         "of a 1,000.00 EUR budget")


@pytest.fixture
def company(tmp_path: Path, transactional_db) -> Iterator[ResolvedConfig]:
    with support.example_company(tmp_path / "fakes") as config:
        yield config


def refund(config: ResolvedConfig, cents: int):
    run = services.start(workflow="refund", input={"order_id": "1002", "amount_cents": cents}, started_by="alice",
                         config=config)
    drain(config)
    return run


def test_finance_sees_the_money_at_risk_beside_the_days_refunds_and_the_budget(live_server, company, browser,
                                                                                 shots):
    first = refund(company, 90_000)
    approvals.decide(run_id=first.id, decision="approve", by="finance-lead", timeout=0)
    drain(company)
    held = refund(company, 20_000)
    approval = Approval.objects.get(run=held)
    assert approval.title == "Refund over the daily budget"

    wait = WebDriverWait(browser, 30, ignored_exceptions=(StaleElementReferenceException,))
    sign_in(browser, live_server.url, "finance-lead", then="/admin/")
    open_inbox(browser, wait)
    wait.until(EC.presence_of_element_located((By.ID, "result_list")))
    [row] = settled(lambda: [(r.find_element(By.CSS_SELECTOR, "strong.sanoma-summary").text,
                              r.find_element(By.CSS_SELECTOR, "td.field-amount .sanoma-money").text,
                              r.find_element(By.CSS_SELECTOR, "td.field-amount .sanoma-spent").text)
                             for r in inbox_rows(browser)])
    assert row == ("Refund 200.00 EUR on order 1002", "200.00 EUR", SPENT)
    full_page(browser, shots / "inbox-over-budget.png")

    open_approval(browser, wait, "Refund 200.00 EUR on order 1002")
    assert text_of(browser, "approval-amount") == "200.00 EUR"
    assert text_of(browser, "approval-spent") == SPENT

    browser.find_element(By.ID, "run-link").click()
    wait.until(EC.presence_of_element_located((By.ID, "run-now")))
    assert text_of(browser, "run-at-risk") == f"200.00 EUR at risk; {SPENT}."
    assert "Waiting for finance-lead to approve “Refund over the daily budget”" in text_of(browser, "run-now")
    full_page(browser, shots / "run-over-budget.png")
