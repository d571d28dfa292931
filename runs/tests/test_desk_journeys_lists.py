"""The desk's lists as an operator meets them, in a real browser (headless Chromium through Selenium):
they refresh themselves without losing the person's place, they fit the window at 1400 and at
800 px, their pages are named for what they show, every moment reads one way, and runs are found
by their tags and by what they wait for.

Needs Debian's `chromium` and `chromium-driver` and the `selenium` package; skipped with the reason
when one is missing. `SANOMA_SCREENSHOT_DIR` keeps the screenshots (default: the test's temp dir).
"""
from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings
from pydantic import BaseModel

from runs import pausing
from runs.approvals.services import decide
from runs.authoring import Schedule, define_workflow
from runs.config.registry import set_config
from runs.config.resolution import load_config
from runs.engine import pauses
from runs.models import Run
from runs.tests import browser_support as support
from runs.tests.browser_support import (
    BROWSER_TESTS,
    EC,
    By,
    Keys,
    StaleElementReferenceException,
    WebDriverWait,
    log_in,
    staff_user,
    worker_for,
)
from runs.tests.fixtures import GET
from runs.versions import register_version

browser = support.browser
shots = support.shots


pytestmark = BROWSER_TESTS

# The desk refreshes a live page every 3 s: what it shows lands within a few of those, or within many
# on a 2-core machine running both databases' suites (a bound only: the waits end when it lands).
LANDS = 45
# Long enough for two refreshes: a page that was going to change would have.
TWO_TICKS = 7.5


class Order(BaseModel):
    order_id: str
    waits: str = "approval"  # approval | message | sleep | fail


def tag_then_wait(ctx, input: Order):
    """Tags the run with its order, then waits for what it was told to (or fails)."""
    ctx.tag(order=input.order_id)
    if input.waits == "approval":
        ctx.approval(f"Refund order {input.order_id}", approver="bob")
    elif input.waits == "message":
        ctx.wait_message("shipped")
    elif input.waits == "sleep":
        ctx.sleep(hours=8)
    else:
        ctx.acme.order.get({"order_id": input.order_id})  # the shop has no such order: the run fails
    return {"order": input.order_id}


orders = define_workflow(name="order-follow-up", title="Follow an order up", input=Order,
                         uses=[GET, "approval", "wait_message", "sleep"], run=tag_then_wait)


def operator(username: str = "olga"):
    """A superuser who may sign in (sees every run and every page)."""
    user = staff_user(username)
    user.is_superuser = True
    user.save()
    return user


def start(engine, order_id: str, waits: str = "approval", run_id: str | None = None) -> Run:
    return engine.run("order-follow-up", {"order_id": order_id, "waits": waits},
                      run_id=run_id or f"order-follow-up-{order_id}")


def row_text(driver, run_id: str) -> str:
    """The runs list's row of `run_id` ("" when not listed), read again if the page swapped it."""
    for _ in range(5):
        try:
            for row in driver.find_elements(By.CSS_SELECTOR, "#result_list tbody tr"):
                if run_id in row.text.replace("\n", ""):
                    return row.text.replace("\n", " ")
            return ""
        except StaleElementReferenceException:
            time.sleep(0.1)
    return ""


def until(driver, condition, seconds: float = LANDS):
    return WebDriverWait(driver, seconds, ignored_exceptions=(StaleElementReferenceException,)).until(condition)


def refreshed(driver) -> str:
    return driver.execute_script("return document.body.dataset.refreshed || ''")


def working(engine):
    stop = threading.Event()
    worker = worker_for(engine, stop)
    worker.start()
    return stop, worker


# ---- live --------------------------------------------------------------------------------------


def test_the_runs_list_and_the_inbox_show_a_decision_made_elsewhere_with_the_filter_sidebar_open(
        live_server, engine_for, browser, shots):
    engine = engine_for(orders)
    operator("olga")
    staff_user("bob")
    first, second = start(engine, "1001"), start(engine, "1002")
    assert first.status == second.status == "waiting"
    stop, worker = working(engine)
    try:
        log_in(browser, live_server.url, "olga", then="/admin/runs/run/")
        until(browser, EC.presence_of_element_located((By.ID, "result_list")))
        # Django's filter sidebar is there, its sections open (what kept the old script from ever refreshing).
        assert browser.find_elements(By.CSS_SELECTOR, "#changelist-filter details[open]")
        assert "Waiting" in row_text(browser, first.id)
        browser.execute_script("window.sanomaMarker = 'same page'")
        decide(run_id=first.id, decision="approve", by="bob", timeout=0)  # elsewhere: bob's own tab, the API
        until(browser, lambda b: "Finished" in row_text(b, first.id))
        assert "Waiting" in row_text(browser, second.id)
        assert browser.execute_script("return window.sanomaMarker") == "same page"  # never reloaded
        browser.save_screenshot(str(shots / "runs-list-live.png"))
        browser.delete_all_cookies()

        log_in(browser, live_server.url, "bob", then="/admin/runs/approval/")
        inbox = until(browser, EC.presence_of_element_located((By.ID, "result_list")))
        assert "Refund order 1002" in inbox.text and "Refund order 1001" not in inbox.text
        assert browser.find_elements(By.CSS_SELECTOR, "#changelist-filter details[open]")
        browser.execute_script("window.sanomaMarker = 'same inbox'")
        decide(run_id=second.id, decision="reject", by="bob", note="not this one", timeout=0)
        until(browser, lambda b: "Refund order 1002" not in b.find_element(By.ID, "content-main").text)
        assert "0 approvals" in browser.find_element(By.ID, "content-main").text
        assert browser.find_element(By.ID, "inbox-badge").text.lower() == "inbox"  # nothing waits for bob now
        assert browser.execute_script("return window.sanomaMarker") == "same inbox"
    finally:
        stop.set()
        worker.join(timeout=10)
    assert Run.objects.get(pk=second.id).status == "failed"


def test_the_list_does_not_change_while_the_person_types_and_keeps_what_they_typed(
        live_server, engine_for, browser, shots):
    engine = engine_for(orders)
    operator("olga")
    run = start(engine, "1001")
    stop, worker = working(engine)
    try:
        log_in(browser, live_server.url, "olga", then="/admin/runs/run/")
        until(browser, EC.presence_of_element_located((By.ID, "result_list")))
        until(browser, lambda b: refreshed(b) != "")  # the page is live: it has refreshed once already
        search = browser.find_element(By.ID, "searchbar")
        search.click()
        search.send_keys("order=10")  # not finished typing: not submitted
        decide(run_id=run.id, decision="approve", by="bob", timeout=0)
        until(browser, lambda b: Run.objects.get(pk=run.id).status == "finished")
        before = refreshed(browser)
        time.sleep(TWO_TICKS)
        assert "Waiting" in row_text(browser, run.id)  # the page did not change under the person's hands
        assert refreshed(browser) == before
        assert browser.execute_script("return document.body.dataset.livePaused") == "typing"
        assert browser.find_element(By.ID, "searchbar").get_attribute("value") == "order=10"

        browser.find_element(By.CSS_SELECTOR, "#content h1").click()  # done typing, for now
        until(browser, lambda b: "Finished" in row_text(b, run.id))
        assert browser.find_element(By.ID, "searchbar").get_attribute("value") == "order=10"  # kept
        browser.save_screenshot(str(shots / "runs-list-typed.png"))
    finally:
        stop.set()
        worker.join(timeout=10)


def test_a_refresh_keeps_ticks_closed_filters_and_the_scroll_position_and_waits_for_an_open_record(
        live_server, engine_for, browser, shots):
    engine = engine_for(orders)
    operator("olga")
    runs = [start(engine, str(1000 + n)) for n in range(12)]
    held = runs[0]
    stop, worker = working(engine)
    try:
        browser.set_window_size(1400, 600)  # the list is longer than the window
        log_in(browser, live_server.url, "olga", then="/admin/runs/run/")
        until(browser, EC.presence_of_element_located((By.ID, "result_list")))
        until(browser, lambda b: refreshed(b) != "")

        # A ticked row: the page waits; unticked, it refreshes.
        box = browser.find_element(By.CSS_SELECTOR, f'input.action-select[value="{held.id}"]')
        box.click()
        decide(run_id=held.id, decision="approve", by="bob", timeout=0)
        until(browser, lambda b: Run.objects.get(pk=held.id).status == "finished")
        time.sleep(TWO_TICKS)
        assert "Waiting" in row_text(browser, held.id)
        assert browser.execute_script("return document.body.dataset.livePaused") == "ticked"
        assert "1 of 12 selected" in browser.find_element(By.CSS_SELECTOR, "span.action-counter").text
        browser.find_element(By.CSS_SELECTOR, f'input.action-select[value="{held.id}"]').click()
        until(browser, lambda b: "Finished" in row_text(b, held.id))

        # A filter section the person closed stays closed; the scroll position stays.
        workflows = '#changelist-filter details[data-filter-title="workflow"]'
        browser.find_element(By.CSS_SELECTOR, f"{workflows} summary").click()
        assert browser.execute_script(
            "return document.querySelector('#changelist-filter details[data-filter-title=\"workflow\"]').open") is False
        browser.execute_script("window.scrollTo(0, 250)")
        mark = refreshed(browser)
        decide(run_id=runs[1].id, decision="approve", by="bob", timeout=0)
        until(browser, lambda b: "Finished" in row_text(b, runs[1].id))
        until(browser, lambda b: refreshed(b) != mark)
        assert browser.execute_script("return window.scrollY") == 250
        assert browser.execute_script(
            "return document.querySelector('#changelist-filter details[data-filter-title=\"workflow\"]').open") is False
        # Ticking works on the refreshed rows as before: the counter counts.
        browser.find_element(By.CSS_SELECTOR, f'input.action-select[value="{runs[2].id}"]').click()
        assert "1 of 12 selected" in browser.find_element(By.CSS_SELECTOR, "span.action-counter").text
        browser.find_element(By.CSS_SELECTOR, f'input.action-select[value="{runs[2].id}"]').click()

        # A run's page with a record's JSON open waits; closed, it shows what happened.
        waiting = runs[3]
        browser.set_window_size(1400, 1100)
        browser.get(f"{live_server.url}/admin/runs/run/{waiting.id}/change/")
        ledger = until(browser, EC.presence_of_element_located((By.ID, "ledger")))
        record = ledger.find_element(By.CSS_SELECTOR, "details summary")
        browser.execute_script("arguments[0].scrollIntoView()", record)
        record.click()
        decide(run_id=waiting.id, decision="approve", by="bob", timeout=0)
        until(browser, lambda b: Run.objects.get(pk=waiting.id).status == "finished")
        time.sleep(TWO_TICKS)
        assert "run.finished" not in browser.find_element(By.ID, "ledger").text
        assert browser.execute_script("return document.body.dataset.livePaused") == "record open"
        browser.find_element(By.CSS_SELECTOR, "#ledger details[open] summary").click()
        until(browser, lambda b: "run.finished" in b.find_element(By.ID, "ledger").text)
        browser.save_screenshot(str(shots / "run-page-live-after-json.png"))
    finally:
        stop.set()
        worker.join(timeout=10)


# ---- widths ------------------------------------------------------------------------------------

COLUMNS = r"""
const box = document.querySelector('#changelist .results'), edge = box.getBoundingClientRect();
const inside = (el) => {
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.left >= edge.left - 1 && r.right <= edge.right + 1;
};
return {
  box: [box.scrollWidth, box.clientWidth], page: [document.documentElement.scrollWidth, window.innerWidth],
  hidden: [...document.querySelectorAll('#result_list thead th, #result_list tbody td, #result_list tbody th')]
            .filter((cell) => !inside(cell)).map((cell) => cell.className + ': ' + cell.innerText.trim()),
  heads: [...document.querySelectorAll('#result_list thead th')]
           .map((th) => th.innerText.trim().split('\n').pop().trim().toLowerCase()),
};
"""


def test_every_column_of_the_runs_list_shows_at_1400_px_and_lists_and_the_run_page_use_the_window_at_800(
        live_server, engine_for, browser, shots):
    engine = engine_for(orders)
    operator("olga")
    staff_user("bob")
    long_id = "order-follow-up-for-a-customer-with-a-long-name-0123456789abcdef"
    start(engine, "1001", run_id=long_id)
    start(engine, "1002", waits="fail")
    start(engine, "1003", waits="message")
    log_in(browser, live_server.url, "olga", then="/admin/runs/run/")
    until(browser, EC.presence_of_element_located((By.ID, "result_list")))

    shown = browser.execute_script(COLUMNS)
    browser.save_screenshot(str(shots / "runs-1400.png"))
    assert shown["heads"][1:] == ["id", "workflow", "status", "started by", "started", "pending approvals", "error",
                                  "sandbox"]
    assert shown["hidden"] == [], shown
    assert shown["box"][0] <= shown["box"][1], f"the list scrolls sideways at 1400 px: {shown['box']}"
    assert shown["page"][0] <= shown["page"][1]
    failed = browser.execute_script(
        "return [...document.querySelectorAll('#result_list tbody tr')].find((row) => row.innerText.includes("
        "'order-follow-up-1002')).querySelector('td.field-error_code').innerText.trim()")
    assert failed not in ("", "-")  # the failed run's error, in view

    browser.set_window_size(800, 1100)
    # The runs list as olga; the inbox as bob, whom the held refund is addressed to (a superuser's
    # inbox holds only what is addressed to them: olga's is empty, a page with no list to measure).
    for who, page in (("olga", "/admin/runs/run/"), ("bob", "/admin/runs/approval/?status=all")):
        if who == "bob":  # the inbox is its approver's: olga (an operator) decides nothing, bob has 1001's
            browser.delete_all_cookies()
            log_in(browser, live_server.url, "bob", then="/admin/")
        browser.get(f"{live_server.url}{page}")
        until(browser, EC.presence_of_element_located((By.ID, "result_list")))
        widths = browser.execute_script(
            "return [document.querySelector('#changelist .results').getBoundingClientRect().width,"
            " document.documentElement.clientWidth, document.documentElement.scrollWidth]")
        browser.save_screenshot(str(shots / f"list-800-{page.split('/')[3]}.png"))
        results, window, scrolled = widths
        assert results >= window - 60, f"{page}: the list is {results} px wide in a {window} px window"
        assert scrolled <= window, f"{page} scrolls sideways at 800 px"
        # Nor does the list inside its own box: its last column ("error", "lets through") is in view.
        inside = browser.execute_script(
            "const box = document.querySelector('#changelist .results');"
            "return [box.scrollWidth, box.clientWidth, [...document.querySelectorAll('#result_list thead th')]"
            ".map((th) => th.innerText.trim().toLowerCase())]")
        assert inside[0] <= inside[1] + 1, f"{page}: the list is {inside[0]} px wide in its {inside[1]} px box " \
                                           f"at 800 px, columns {inside[2]}"
    browser.delete_all_cookies()
    log_in(browser, live_server.url, "olga", then=f"/admin/runs/run/{long_id}/change/")
    until(browser, EC.presence_of_element_located((By.ID, "ledger")))
    content, window = browser.execute_script(
        "return [document.getElementById('content-main').getBoundingClientRect().width,"
        " document.documentElement.clientWidth]")
    browser.save_screenshot(str(shots / "run-800.png"))
    assert content >= window - 60, f"the run page uses {content} px of a {window} px window"


# ---- words -------------------------------------------------------------------------------------


@pytest.fixture
def company(tmp_path):
    """The example company as a site runs it: its fakes kept in a folder (the demo, a worker)."""
    config = load_config(Path(settings.BASE_DIR) / "company", fakes="instance", fake_dir=tmp_path / "fakes")
    set_config(config)
    yield config
    set_config(None)


def test_pages_are_named_for_what_they_show_and_the_catalog_lists_every_vendor_and_scenario_once(
        live_server, company, browser, shots):
    operator("olga")
    log_in(browser, live_server.url, "olga", then="/admin/runs/run/")
    until(browser, EC.presence_of_element_located((By.ID, "changelist")))
    assert browser.find_element(By.CSS_SELECTOR, "#content h1").text == "Runs"  # not "Select run to view"
    assert browser.find_element(By.CSS_SELECTOR, "div.breadcrumbs").text == "Home › Runs"  # not "Runs › Runs"
    assert browser.title.startswith("Runs |")
    sidebar = [link.text for link in browser.find_elements(By.CSS_SELECTOR, "#nav-sidebar th a")]
    assert sidebar.count("Workflows") == 1, sidebar
    assert "Schedules" in sidebar and "Schedule states" not in sidebar
    browser.save_screenshot(str(shots / "sidebar.png"))

    # The one Workflows is the catalog's; who may start one is granted from its page.
    browser.find_element(By.CSS_SELECTOR, "#nav-sidebar").find_element(By.LINK_TEXT, "Workflows").click()
    until(browser, EC.presence_of_element_located((By.LINK_TEXT, "refund"))).click()
    until(browser, EC.presence_of_element_located((By.ID, "scenarios")))
    scenarios = browser.find_element(By.ID, "scenarios").text.splitlines()
    # Every scenario that starts refund, once: refund.feature's (the collection's ones too) and budget.feature's.
    assert len(scenarios) == len(set(scenarios)) == 14, scenarios
    assert sum("refund.feature" in s for s in scenarios) == 6 and sum("budget.feature" in s for s in scenarios) == 8
    assert any("a second refund of an order replaces its note" in s for s in scenarios)
    assert any("finance approves a refund" in s for s in scenarios)
    browser.find_element(By.ID, "grant-start").click()
    until(browser, lambda b: "/admin/runs/workflowentry/" in b.current_url and "/permissions/" in b.current_url)
    assert "refund" in browser.find_element(By.CSS_SELECTOR, "div.breadcrumbs").text

    browser.get(f"{live_server.url}/admin/catalog/connectors/")
    table = until(browser, EC.presence_of_element_located((By.ID, "connectors")))
    rows = [row.text for row in table.find_elements(By.CSS_SELECTOR, "tbody tr")]
    vendors = [re.search(r"\((\w+)\)", row).group(1) for row in rows]  # type: ignore[union-attr]
    assert sorted(vendors) == sorted(set(vendors)) and "sanoma" in vendors, rows
    [builtin] = [row for row in rows if "(sanoma)" in row]
    assert builtin.startswith("sanoma's own operations (built in)")
    table.find_element(By.PARTIAL_LINK_TEXT, "sanoma's own operations").click()
    until(browser, EC.presence_of_element_located((By.CSS_SELECTOR, "fieldset.sanoma-operation")))
    ops = {el.get_attribute("id") for el in browser.find_elements(By.CSS_SELECTOR, "fieldset.sanoma-operation")}
    assert {"op-sanoma.person.create", "op-sanoma.change.merge", "op-sanoma.wakeup.register"} <= ops
    browser.save_screenshot(str(shots / "connectors.png"))


# ---- moments -----------------------------------------------------------------------------------

# Django's own way ("Dec. 3, 2026, 5:14 p.m.") and raw ISO ("2026-12-03T17:14:59+00:00").
DJANGO_MOMENT = re.compile(r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.? \d{1,2}, \d{4}|\b[ap]\.m\.")
ISO_MOMENT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")


def scheduled(ctx, input):
    return {}


@pytest.fixture
def fresh_pauses():
    """The engine keeps the pauses it read for a moment: none of another test's, none left after."""
    pauses.forget()
    yield
    pauses.forget()


def test_every_moment_on_the_lists_reads_the_desks_one_way(live_server, engine_for, browser, shots, fresh_pauses):
    engine = engine_for(orders, define_workflow(name="nightly", run=scheduled,
                                                trigger=Schedule(cron="0 3 * * *", timezone="Europe/Helsinki")))
    register_version(version=engine.config.version, promote=True)
    operator("olga")
    sleeping = start(engine, "1001", waits="sleep")
    assert sleeping.status == "waiting" and sleeping.wake_at is not None
    pausing.pause(kind="workflow", target="order-follow-up", reason="checking orders", by="olga")
    pausing.pause(kind="connector", target="acme", reason="the shop is down", by="olga")
    pausing.unpause(kind="connector", target="acme", by="olga")

    log_in(browser, live_server.url, "olga", then="/admin/")
    until(browser, EC.presence_of_element_located((By.ID, "inbox-badge")))  # signed in
    pages = {
        "/admin/runs/pause/": "#result_list", "/admin/runs/appversion/": "#result_list",
        "/admin/wakeups/schedulestate/": "#content-main", "/admin/runs/ledgerrecord/": "#result_list",
        f"/admin/runs/run/{sleeping.id}/change/": ".field-waiting_detail",
    }
    for page, where in pages.items():
        browser.get(f"{live_server.url}{page}")
        part = until(browser, EC.presence_of_element_located((By.CSS_SELECTOR, where)))
        text = part.text
        browser.save_screenshot(str(shots / f"moments-{page.strip('/').replace('/', '-')}.png"))
        assert not DJANGO_MOMENT.search(text), f"{page} shows a moment Django's way: {DJANGO_MOMENT.search(text)}"
        assert not ISO_MOMENT.search(text), f"{page} shows a raw ISO moment: {ISO_MOMENT.search(text)}"
        moments = part.find_elements(By.TAG_NAME, "time")
        assert moments, f"{page} shows no moment"
        for shown in moments:
            assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [A-Z]+", shown.text), (page, shown.text)
            assert shown.get_attribute("title").endswith(" UTC")  # UTC on hover


# ---- finding runs ------------------------------------------------------------------------------


def test_runs_are_found_by_a_tag_typed_in_the_search_box_and_by_what_they_wait_for(
        live_server, engine_for, browser, shots):
    engine = engine_for(orders)
    operator("olga")
    approval = start(engine, "1001", run_id="by-approval")
    message = start(engine, "1002", waits="message", run_id="by-message")
    sleep = start(engine, "10011", waits="sleep", run_id="by-sleep")  # its tag contains 1001, but is not order=1001
    log_in(browser, live_server.url, "olga", then="/admin/runs/run/")
    search = until(browser, EC.presence_of_element_located((By.ID, "searchbar")))
    search.send_keys("order=1001", Keys.ENTER)
    until(browser, EC.url_contains("q="))
    listed = browser.find_element(By.ID, "result_list").text
    assert approval.id in listed and sleep.id not in listed and message.id not in listed
    browser.save_screenshot(str(shots / "search-by-tag.png"))

    browser.get(f"{live_server.url}/admin/runs/run/")
    filters = until(browser, EC.presence_of_element_located((By.ID, "changelist-filter")))
    choices = filters.find_element(By.CSS_SELECTOR, 'details[data-filter-title="waiting for"]').text
    for label in ("an approval", "a message", "a sleep to end", "a child run", "a word on a call in doubt",
                  "an unpause", "a call's next try"):
        assert label in choices  # every kind, whether or not a run waits for it now
    filters.find_element(By.LINK_TEXT, "a message").click()
    until(browser, EC.url_contains("waiting_for=message"))
    listed = browser.find_element(By.ID, "result_list").text
    assert message.id in listed and approval.id not in listed and sleep.id not in listed
    browser.find_element(By.ID, "changelist-filter").find_element(By.LINK_TEXT, "a call's next try").click()
    until(browser, EC.url_contains("waiting_for=retry"))
    assert "0 runs" in browser.find_element(By.ID, "changelist").text

    # The runs of one tag, as the API's `tag=` (a link or a bookmark): shown in the filters with "All".
    browser.get(f"{live_server.url}/admin/runs/run/?tag=order%3D1002")
    listed = until(browser, EC.presence_of_element_located((By.ID, "result_list"))).text
    assert message.id in listed and approval.id not in listed
    assert "order=1002" in browser.find_element(By.CSS_SELECTOR, 'details[data-filter-title="tag"]').text
    browser.get(f"{live_server.url}/admin/runs/run/?tag=order")
    error = until(browser, EC.presence_of_element_located((By.CSS_SELECTOR, "ul.messagelist li.error")))
    assert error.text == "A tag filter is key=value (e.g. order=1001); got 'order'"
    assert "0 runs" in browser.find_element(By.ID, "changelist").text
