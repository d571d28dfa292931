"""The desk in a real browser (headless Chromium through Selenium): the run page's graph, and what a
user who has no part in a run does not see.

Needs Debian's `chromium` and `chromium-driver` and the `selenium` package; skipped with the reason
when one is missing. `SANOMA_SCREENSHOT_DIR` keeps the screenshots (default: the test's temp dir).
With `SANOMA_README_SHOTS` set to a folder, the tests also leave there the README's pictures of the
run page and the inbox, at 1200x900 (`scripts/screenshots.py` makes and shrinks them).
"""
from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from django.contrib.auth.models import Permission
from pydantic import BaseModel, Field

from runs.approvals.services import decide
from runs.authoring import define_workflow
from runs.engine import clock
from runs.models import Approval, Run
from runs.tests import browser_support as support
from runs.tests.browser_support import BROWSER_TESTS, EC, By, WebDriverWait, full_page, log_in, staff_user
from runs.tests.fixtures import GET, REFUND, SEND
from runs.tests.test_api import money_needs_bob

# The admin's browser tests' fixtures: a headless Chromium, and the folder screenshots are kept in.
browser = support.browser
shots = support.shots


pytestmark = BROWSER_TESTS


class RefundThenTell(BaseModel):
    order_id: str = Field(min_length=1)
    amount: int = Field(gt=0)


def refund_wait_and_tell(ctx, input: RefundThenTell):
    """A refund the policy holds for bob, a night's wait, then two calls side by side."""
    refund = ctx.acme.order.refund({"order_id": input.order_id, "amount": input.amount})
    ctx.sleep(hours=8)
    order, mail = ctx.all([
        lambda: ctx.acme.order.get({"order_id": input.order_id}),
        lambda: ctx.acme.mail.send({"to": "customer", "text": refund.refund_id}),
    ])
    return {"refund": refund.refund_id, "mail": mail.id, "total": order.total}


refund_and_tell = define_workflow(name="refund-and-tell", title="Refund, wait, tell", input=RefundThenTell,
                                  uses=[REFUND, GET, SEND, "sleep", "all"], run=refund_wait_and_tell)


def readme_shot(driver, name: str) -> None:
    """The top of the page at 1200x900 as `<SANOMA_README_SHOTS>/<name>.png`, when that is set."""
    folder = os.environ.get("SANOMA_README_SHOTS")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    # The viewport itself (a window size would include the browser's own bars).
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 1200, "height": 900, "deviceScaleFactor": 1, "mobile": False})
    try:
        driver.execute_script("window.scrollTo(0, 0)")
        driver.save_screenshot(str(Path(folder) / f"{name}.png"))
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def node_texts(page, css: str) -> list[str]:
    return [" ".join((element.get_attribute("textContent") or "").split())
            for element in page.find_elements(By.CSS_SELECTOR, css)]


def text(element, css: str) -> str:
    """The text of the one element under `element` matching `css`, as written (not as styled: the
    page shows some labels in capitals)."""
    [found] = node_texts(element, css)
    return found


def test_the_graph_shows_the_hold_on_its_call_the_sleep_with_its_end_and_the_lanes_of_all(
        live_server, engine_for, browser, shots):
    engine = engine_for(refund_and_tell, policy=money_needs_bob)
    staff_user("bob")
    run = engine.run("refund-and-tell", {"order_id": "1", "amount": 10}, run_id="refund-and-tell-1")
    assert run.status == "waiting"
    decide(run_id=run.id, decision="approve", by="bob", note="Order checked", timeout=0)
    engine.drain()
    slept = Run.objects.get(pk=run.id)
    assert slept.status == "waiting"
    [sleep] = engine.records(slept, "sleep.started")
    clock.advance(timedelta(hours=8, minutes=1))
    engine.drain()
    assert Run.objects.get(pk=run.id).status == "finished"

    wait = WebDriverWait(browser, 20)
    log_in(browser, live_server.url, "bob", then=f"/admin/runs/run/{run.id}/change/")
    graph = wait.until(EC.presence_of_element_located((By.ID, "graph")))

    kinds = [node.get_attribute("data-kind")
             for node in graph.find_elements(By.CSS_SELECTOR, "ol.sanoma-graph > li")]
    assert kinds == ["start", "call", "sleep", None, "end"]  # None: the lanes of ctx.all

    # The policy's hold sits with the call it held, with what became of the approval.
    call = graph.find_element(By.CSS_SELECTOR, "ol.sanoma-graph > li.sanoma-node.call")
    assert text(call, ".sanoma-node-title") == "acme.order.refund"
    assert text(call, ".sanoma-effect") == "money"
    assert text(call, ".sanoma-outcome") == "ok"
    hold = call.find_element(By.CSS_SELECTOR, ".sanoma-hold")
    assert "approved" in (hold.get_attribute("class") or "").split()
    # The policy's title, what became of it, and who was asked and decided.
    assert hold.text == "held by the policy: Refunds need bob, approved (asked of bob; approved by bob)"

    # The sleep is labelled with when it ends, in the page's one time format.
    [sleeping] = graph.find_elements(By.CSS_SELECTOR, "ol.sanoma-graph > li.sanoma-node.sleep")
    ends = sleeping.find_element(By.CSS_SELECTOR, ".sanoma-detail")
    until = clock.from_ms(sleep["until"])
    [shown] = ends.find_elements(By.TAG_NAME, "time")
    assert shown.get_attribute("datetime") == until.isoformat()
    assert ends.text.startswith(f"{until:%Y-%m-%d %H:%M:%S} UTC")  # the site's zone, named; not epoch milliseconds

    # ctx.all: one lane per member, each with its call, side by side.
    [group] = graph.find_elements(By.CSS_SELECTOR, "li.sanoma-lanes")
    assert text(group, ".sanoma-lanes-title") == "ctx.all: 2 together"
    lanes = group.find_elements(By.CSS_SELECTOR, "ol.sanoma-lane")
    assert [node_texts(lane, ".sanoma-node-title") for lane in lanes] == [["acme.order.get"], ["acme.mail.send"]]
    assert lanes[0].location["x"] < lanes[1].location["x"] and lanes[0].location["y"] == lanes[1].location["y"]
    assert text(graph, "li.sanoma-node.end .sanoma-node-title") == "finished"
    full_page(browser, shots / "run-graph.png")
    readme_shot(browser, "run-page")


def test_someone_with_no_part_in_a_run_sees_neither_its_approval_nor_the_run(
        live_server, engine_for, browser, shots):
    engine = engine_for(refund_and_tell, policy=money_needs_bob)
    staff_user("bob")
    carol = staff_user("carol")  # may start runs of her own; not the starter, not the approver, no rights over others
    carol.user_permissions.add(Permission.objects.get(content_type__app_label="runs", codename="start_workflow"))
    engine.run("refund-and-tell", {"order_id": "1", "amount": 10}, run_id="held-for-bob")
    engine.run("refund-and-tell", {"order_id": "2", "amount": 5}, run_id="carols-own", by="carol")
    assert Approval.objects.filter(run_id="held-for-bob", status="pending").exists()

    wait = WebDriverWait(browser, 20)
    # The approver sees both: the page and the inbox work, so what carol does not see is hidden from her.
    log_in(browser, live_server.url, "bob", then="/admin/runs/approval/")
    inbox = wait.until(EC.presence_of_element_located((By.ID, "result_list"))).text
    assert "held-for-bob" in inbox and "carols-own" in inbox  # both refunds wait for bob
    readme_shot(browser, "inbox")
    browser.delete_all_cookies()

    log_in(browser, live_server.url, "carol", then="/admin/runs/approval/")
    wait.until(EC.presence_of_element_located((By.ID, "content-main")))
    inbox_page = browser.find_element(By.ID, "content-main").text
    assert "held-for-bob" not in inbox_page and "0 approvals" in inbox_page  # nothing waits for carol
    browser.save_screenshot(str(shots / "outsider-inbox.png"))
    browser.find_element(By.LINK_TEXT, "All").click()  # decided or not
    wait.until(EC.url_contains("status"))
    assert "0 approvals" in browser.find_element(By.ID, "content-main").text

    browser.get(f"{live_server.url}/admin/runs/run/")
    listed = wait.until(EC.presence_of_element_located((By.ID, "result_list"))).text
    assert "carols-own" in listed and "held-for-bob" not in listed

    browser.get(f"{live_server.url}/admin/runs/run/held-for-bob/change/")
    message = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "ul.messagelist li")))
    assert message.text == "No run held-for-bob, or you may not see it"
    assert browser.find_elements(By.ID, "graph") == [] and browser.find_elements(By.ID, "ledger") == []
    assert "held-for-bob" not in browser.find_element(By.ID, "result_list").text
    browser.save_screenshot(str(shots / "outsider-run.png"))
    browser.get(f"{live_server.url}/admin/runs/run/no-such-run/change/")
    missing = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "ul.messagelist li")))
    assert missing.text == "No run no-such-run, or you may not see it"  # a missing run reads the same
