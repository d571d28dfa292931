"""A run over time, in a real browser (headless Chromium through Selenium), clicked as a person does:

- alice opens her refund check, which waited three days for bob: the waterfall draws the wait as
  a labelled break, not three days of empty axis; bob approves, and the open wait closes on her
  page as it refreshes itself; the 21 reads are one line that opens to each read.
- an operator compares a failed run with one that finished, from the run page's "Compare with…"
  and from two runs ticked in the list, and sees the step that differs marked.

Needs Debian's `chromium` and `chromium-driver` and the `selenium` package; skipped with the reason
when one is missing. With `SANOMA_README_SHOTS` naming a folder, the README's pictures of a run's
waterfall and of a comparison are written there (`scripts/screenshots.py` does this, then shrinks
and copies them to docs/screenshots/); otherwise nothing is written.
"""
from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from runs.approvals.services import decide
from runs.engine import clock
from runs.seed import seed_person
from runs.tests import browser_support as support
from runs.tests.browser_support import BROWSER_TESTS, EC, PASSWORD, By, WebDriverWait, log_in, text_of
from runs.tests.test_run_timeline import check_then_ask

browser = support.browser


pytestmark = BROWSER_TESTS


def person(username: str, *perms: str):
    return seed_person(username=username, perms=perms, staff=True, password=PASSWORD)


def picture(browser, name: str, element=None) -> None:
    """A README picture, written only when SANOMA_README_SHOTS names the folder."""
    folder = os.environ.get("SANOMA_README_SHOTS")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    if element is not None:  # the whole element: the window made as tall as it is, for the picture
        browser.set_window_size(1400, min(max(element.size["height"] + 300, 1100), 4000))
        element.screenshot(str(Path(folder) / name))
        browser.set_window_size(1400, 1100)
    else:
        browser.save_screenshot(str(Path(folder) / name))


def test_a_three_day_wait_reads_at_a_glance_and_the_repeated_reads_fold(live_server, engine_for, browser):
    engine = engine_for(check_then_ask)
    person("alice", "runs.start_workflow")
    person("bob")
    run = engine.run("check-then-ask", {"reads": 21}, run_id="refund-check-1001", by="alice")
    assert (run.status, run.waiting_for) == ("waiting", "approval")
    clock.advance(timedelta(days=3, hours=2))
    wait = WebDriverWait(browser, 20)

    # alice's page: the wait is open and reaches now across a labelled break.
    log_in(browser, live_server.url, "alice", then=f"/admin/runs/run/{run.id}/change/")
    waterfall = wait.until(EC.presence_of_element_located((By.ID, "waterfall")))
    assert [g.text for g in waterfall.find_elements(By.CSS_SELECTOR, ".sanoma-wf-gap-label")] == ["… 3 d 2 h …"]
    waiting = waterfall.find_element(By.CSS_SELECTOR, ".sanoma-wf-row.approval.open")
    assert "3 d 2 h so far" in waiting.text

    # bob approves elsewhere; her page follows by itself: the wait closes, the mail is sent.
    decide(run_id=run.id, decision="approve", by="bob", timeout=0)
    engine.drain()
    wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#waterfall .sanoma-wf-row.approval.approved"))
    wait.until(lambda b: "took 3 d 2 h" in text_of(b, "waterfall-took"))
    assert "acme.mail.send" in text_of(browser, "waterfall")

    # The 21 reads are one line; opening it shows each read.
    fold = browser.find_element(By.CSS_SELECTOR, "#waterfall details.sanoma-wf-fold")
    assert fold.get_attribute("data-count") == "21"
    reads = fold.find_elements(By.CSS_SELECTOR, ".sanoma-wf-row.nested")
    assert len(reads) == 21 and not any(r.is_displayed() for r in reads)
    summary = fold.find_element(By.TAG_NAME, "summary")
    assert "acme.order.get ×21" in summary.text and "21 ok" in summary.text
    summary.click()
    wait.until(lambda b: all(r.is_displayed() for r in reads))
    assert all("acme.order.get" in r.text for r in reads)
    browser.execute_script("arguments[0].scrollIntoView()", waterfall)
    picture(browser, "waterfall.png", browser.find_element(By.ID, "waterfall"))


def test_an_operator_compares_a_failed_run_with_a_finished_one_from_the_desk(live_server, engine_for, browser):
    engine = engine_for(check_then_ask)
    person("olga", "runs.view_any_run", "runs.operate_runs")
    good = engine.run("check-then-ask", {"reads": 2}, run_id="check-1001")
    decide(run_id=good.id, decision="approve", by="bob", timeout=0)
    engine.drain()
    bad = engine.run("check-then-ask", {"order_id": "9", "reads": 2}, run_id="check-1009")
    assert bad.status == "failed"
    wait = WebDriverWait(browser, 20)

    # From the failed run's page: Compare with…, the finished one's id typed.
    log_in(browser, live_server.url, "olga", then=f"/admin/runs/run/{bad.id}/change/")
    wait.until(EC.element_to_be_clickable((By.ID, "compare-link"))).click()
    other = wait.until(EC.presence_of_element_located((By.ID, "id_with")))
    other.send_keys("check-10O1")  # a typo: said, with what was typed kept
    browser.find_element(By.ID, "compare-button").click()
    assert "No run check-10O1" in wait.until(EC.presence_of_element_located((By.ID, "compare-problem"))).text
    other = browser.find_element(By.ID, "id_with")
    assert other.get_attribute("value") == "check-10O1"
    other.clear()
    other.send_keys(good.id)
    browser.find_element(By.ID, "compare-button").click()

    steps = wait.until(EC.presence_of_element_located((By.ID, "compare-steps")))
    first = steps.find_element(By.CSS_SELECTOR, "tr[data-step='1']")
    assert "differs" in (first.get_attribute("class") or "").split()
    assert "outcome, input, output, error" in first.find_element(By.CSS_SELECTOR, "th").text
    assert "no order 9" in first.text
    marked = [dt.text for dt in first.find_elements(By.CSS_SELECTOR, "dt.differs")]
    assert "error" in marked and "input" in marked
    status = browser.find_element(By.CSS_SELECTOR, "#compare-facts tr[data-fact='status']")
    assert "differs" in (status.get_attribute("class") or "").split()
    assert "version" not in [r.get_attribute("data-fact") for r in
                             browser.find_elements(By.CSS_SELECTOR, "#compare-facts tr.differs")]
    picture(browser, "compare.png", browser.find_element(By.ID, "content-main"))

    # From the runs list: the two ticked, the action chosen; the older run is A.
    browser.get(f"{live_server.url}/admin/runs/run/")
    wait.until(EC.presence_of_element_located((By.ID, "result_list")))
    for run in (good, bad):
        browser.find_element(By.CSS_SELECTOR, f"input.action-select[value='{run.id}']").click()
    action = browser.find_element(By.NAME, "action")
    action.find_element(By.CSS_SELECTOR, "option[value=compare_two]").click()
    browser.find_element(By.NAME, "index").click()
    wait.until(EC.presence_of_element_located((By.ID, "compare-steps")))
    assert browser.current_url.endswith(f"/admin/runs/run/{good.id}/compare/?with={bad.id}")
    heads = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#compare-steps thead th")]
    assert [h.lower() for h in heads[1:]] == [f"a: {good.id}", f"b: {bad.id}"]  # headings are set in capitals
    assert heads[1:] == [f"A: {good.id}", f"B: {bad.id}"]  # but not the run ids: ids are case-sensitive
