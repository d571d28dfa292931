"""The run page's actions as a person meets them, in a real browser (headless Chromium through
Selenium): each test clicks and types as the person does, and never posts to a URL the page does
not lead to.

- The starter, and a superuser, send a message from the run page (it answered a bare 403: its
  form sat inside the page's read-only form).
- The starter cancels a refund held for bob, saying why; bob's inbox, badge and `/api/approvals`
  no longer hold its approval.
- An operator forks a finished refund from a step, seeing first that the customer's mail is sent
  again; reruns a failed one, seeing every call made again.
- A run page followed live changes its breadcrumb and title with the run, and draws its end once.

Needs Debian's `chromium` and `chromium-driver` and the `selenium` package; skipped with the reason
when one is missing. `SANOMA_SCREENSHOT_DIR` keeps the screenshots (default: the test's temp dir).
"""
from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from connectors import DriverError
from runs import services
from runs.authoring import define_workflow
from runs.engine.transitions import RUNTIME_ACTOR
from runs.models import Approval, Run, RunMessage, RunStatus
from runs.seed import seed_person
from runs.tests import browser_support as support
from runs.tests.browser_support import (
    BROWSER_TESTS,
    EC,
    PASSWORD,
    By,
    StaleElementReferenceException,
    WebDriverWait,
    full_page,
    log_in,
    text_of,
)
from runs.tests.fixtures import REFUND, SEND
from runs.tests.test_api import money_needs_bob

browser = support.browser
shots = support.shots


pytestmark = BROWSER_TESTS

OPERATOR_PERMS = ("runs.view_any_run", "runs.operate_runs", "runs.rerun_runs", "runs.start_workflow")


class Refund(BaseModel):
    order_id: str = "1"
    amount: int = 500


def _refund_and_tell(ctx, input: Refund):
    refunded = ctx.acme.order.refund({"order_id": input.order_id, "amount": input.amount})  # step 1
    mail = ctx.acme.mail.send({"to": "customer", "text": f"refunded {refunded.refund_id}"})  # step 2
    return {"refund": refunded.refund_id, "mail": mail.id}


refund_and_tell = define_workflow(name="refund-and-tell", title="Refund and tell the customer", input=Refund,
                                  uses=[REFUND, SEND], run=_refund_and_tell)


class Shipment(BaseModel):
    tracking: str
    carrier: str = "post"


def _shipped(ctx, input):
    return ctx.wait_message("shipped", model=Shipment).model_dump()


waits_for_shipping = define_workflow(name="ship", title="Wait for the shipment", uses=["wait_message"], run=_shipped)


def person(username: str, *perms: str, superuser: bool = False):
    """Someone who signs in to the desk with PASSWORD."""
    return seed_person(username=username, perms=perms, staff=True, superuser=superuser, password=PASSWORD)


def said(browser) -> str:
    """The page's messages (Django's message list), waited for."""
    return WebDriverWait(browser, 20).until(
        EC.presence_of_element_located((By.CSS_SELECTOR, "ul.messagelist"))).text


def body_json(browser) -> dict:
    return json.loads(browser.find_element(By.TAG_NAME, "body").text)


# -- sending a message ------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["alice", "root"], ids=["the starter", "a superuser"])
def test_a_message_is_sent_from_the_run_page(live_server, engine_for, browser, shots, who):
    engine = engine_for(waits_for_shipping)
    person("alice", "runs.start_workflow")
    person("root", superuser=True)
    run = engine.run("ship", by="alice")
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "message")
    wait = WebDriverWait(browser, 20)
    log_in(browser, live_server.url, who, then=f"/admin/runs/run/{run.id}/change/")

    wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, "#send-message summary"))).click()
    # The form says which topic the run waits on (typed in already) and what its payload holds.
    assert text_of(browser, "expected-messages") == 'Waits now for a message on shipped; the payload\'s fields: ' \
        'tracking (str, required), carrier (str, default "post"); other keys are dropped.'
    assert browser.find_element(By.CSS_SELECTOR, "#send-message input[name=topic]").get_attribute("value") == "shipped"
    payload = browser.find_element(By.CSS_SELECTOR, "#send-message input[name=payload]")
    assert json.loads(payload.get_attribute("value")) == {"tracking": "", "carrier": "post"}
    payload.clear()
    payload.send_keys("[1]")  # not a JSON object
    send = browser.find_element(By.CSS_SELECTOR, "#send-message input[type=submit]")
    send.click()
    wait.until(EC.staleness_of(send))
    # Not a bare 403 (the send posted the page's read-only form), but a refusal on a page that says
    # why beside the field and keeps what was typed.
    assert "403 Forbidden" not in browser.page_source and "You may not open this page" not in browser.page_source
    problem = wait.until(EC.presence_of_element_located((By.ID, "message-problem")))
    assert problem.text.startswith("Not sent:")
    assert browser.find_element(By.ID, "id_topic").get_attribute("value") == "shipped"
    assert "must be a JSON object" in browser.find_element(By.CSS_SELECTOR, "#id_payload + .errorlist").text
    browser.save_screenshot(str(shots / f"message-refused-{who}.png"))
    assert not RunMessage.objects.exists()

    payload = browser.find_element(By.ID, "id_payload")
    payload.clear()
    payload.send_keys('{"tracking": "X1"}')
    browser.find_element(By.ID, "send-message-button").click()

    assert f"Sent to {run.id} on “shipped”" in said(browser)
    assert browser.current_url.endswith(f"/admin/runs/run/{run.id}/change/")
    [message] = RunMessage.objects.all()
    assert (message.topic, message.payload, message.sent_by) == ("shipped", {"tracking": "X1"}, who)
    engine.drain()
    run.refresh_from_db()
    assert (run.status, run.result) == (RunStatus.FINISHED, {"tracking": "X1", "carrier": "post"})


# -- cancelling ----------------------------------------------------------------------------------------


def test_cancelling_with_a_reason_takes_the_approval_out_of_the_approvers_inbox(
        live_server, engine_for, browser, shots):
    engine = engine_for(refund_and_tell, policy=money_needs_bob)
    person("alice", "runs.start_workflow")
    person("bob")
    run = engine.run("refund-and-tell", {"order_id": "1", "amount": 900}, by="alice")
    assert Approval.objects.get(run=run).status == "pending"
    wait = WebDriverWait(browser, 20)

    # bob has the held refund in his inbox.
    log_in(browser, live_server.url, "bob", then="/admin/")
    assert wait.until(EC.presence_of_element_located((By.ID, "inbox-badge"))).text.lower() == "inbox 1"
    browser.delete_all_cookies()

    # alice cancels it from its page, and is asked why.
    log_in(browser, live_server.url, "alice", then=f"/admin/runs/run/{run.id}/change/")
    wait.until(EC.element_to_be_clickable((By.ID, "cancel-link"))).click()
    withdrawn = wait.until(EC.presence_of_element_located((By.ID, "cancel-withdraws")))
    assert "withdrawn" in withdrawn.text
    assert "“Refunds need bob”, asked of bob" in browser.find_element(By.ID, "content-main").text
    browser.find_element(By.ID, "id_reason").send_keys("   ")  # blank is not a reason
    browser.find_element(By.ID, "confirm-cancel").click()
    problem = wait.until(EC.presence_of_element_located((By.ID, "reason-problem")))
    assert problem.text == "Say why the run is cancelled: the reason is kept in its ledger"
    assert Run.objects.get(pk=run.id).status == RunStatus.WAITING
    reason = browser.find_element(By.ID, "id_reason")
    reason.clear()
    reason.send_keys("The customer called back: no refund")
    browser.save_screenshot(str(shots / "cancel-asks-why.png"))
    browser.find_element(By.ID, "confirm-cancel").click()

    assert f"Cancelled {run.id}" in said(browser)
    now = text_of(browser, "run-now")
    assert now.startswith("Cancelled ") and now.endswith("by alice: “The customer called back: no refund”.")
    assert browser.find_elements(By.ID, "cancel-link") == []
    full_page(browser, shots / "cancelled-run.png")
    approval = Approval.objects.get(run=run)
    assert (approval.status, approval.decided_by) == ("withdrawn", RUNTIME_ACTOR)
    # Its page says why it was withdrawn, and by whom, not only "sanoma:runtime".
    browser.get(f"{live_server.url}/admin/runs/approval/{approval.pk}/change/")
    decided = wait.until(EC.presence_of_element_located((By.ID, "decided-by"))).text
    assert decided.startswith("withdrawn: its run was cancelled by alice (“The customer called back: no refund”), ")
    # and the run's page, in the same words.
    browser.back()
    inline = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "td.field-decided_by_said"))).text
    assert inline == "withdrawn: its run was cancelled by alice (“The customer called back: no refund”)"
    # So do its waterfall and its picture: never "withdrawn by sanoma:runtime".
    for box in ("waterfall", "graph"):
        assert inline in " ".join(text_of(browser, box).split()), box
        assert "sanoma:runtime" not in text_of(browser, box), box
    browser.delete_all_cookies()

    # bob's inbox, badge and API no longer hold it.
    log_in(browser, live_server.url, "bob", then="/admin/runs/approval/")
    wait.until(EC.presence_of_element_located((By.ID, "content-main")))
    empty = browser.find_element(By.ID, "content-main").text
    assert text_of(browser, "inbox-empty") == "Nothing waits for you to decide."
    assert "0 results (" not in empty and "total)" not in empty  # the decided one is not counted in
    assert text_of(browser, "inbox-badge").lower() == "inbox"
    browser.get(f"{live_server.url}/api/approvals")
    assert body_json(browser)["count"] == 0


def test_cancelling_selected_runs_from_the_list_asks_why_once(live_server, engine_for, browser, shots):
    engine = engine_for(waits_for_shipping)
    person("olga", *OPERATOR_PERMS)
    runs = [engine.run("ship", run_id=f"ship-{n}") for n in (1, 2)]
    wait = WebDriverWait(browser, 20)
    log_in(browser, live_server.url, "olga", then="/admin/runs/run/")
    wait.until(EC.presence_of_element_located((By.ID, "result_list")))
    for run in runs:
        browser.find_element(By.CSS_SELECTOR, f"input.action-select[value='{run.id}']").click()
    action = browser.find_element(By.NAME, "action")
    action.find_element(By.CSS_SELECTOR, "option[value=cancel_selected]").click()
    browser.find_element(By.NAME, "index").click()

    wait.until(EC.presence_of_element_located((By.ID, "to-cancel")))
    assert "2 runs will be cancelled" in browser.find_element(By.ID, "content-main").text
    browser.find_element(By.ID, "id_reason").send_keys("The warehouse closed")
    browser.find_element(By.ID, "confirm-cancel").click()

    assert "Cancelled 2 run(s)" in said(browser)
    assert set(Run.objects.values_list("status", flat=True)) == {RunStatus.CANCELLED}


# -- fork and rerun ----------------------------------------------------------------------------------


def test_forking_a_finished_refund_shows_the_mail_it_sends_again_before_it_is_made(
        live_server, engine_for, browser, shots):
    engine = engine_for(refund_and_tell)
    person("ops", *OPERATOR_PERMS)
    run = engine.run("refund-and-tell", {"order_id": "1", "amount": 900})
    assert run.status == RunStatus.FINISHED
    assert (len(engine.fake.state["refunds"]), len(engine.fake.state["mail"])) == (1, 1)
    wait = WebDriverWait(browser, 20)
    log_in(browser, live_server.url, "ops", then=f"/admin/runs/run/{run.id}/change/")

    wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, "ul.object-tools a[href$='/fork/']"))).click()
    wait.until(EC.presence_of_element_located((By.ID, "fork-steps")))
    browser.find_element(By.LINK_TEXT, "Fork from step 1…").click()
    # From step 1, both calls are made again: the refund paid and the mail sent.
    warning = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".plan-effects")))
    assert "money, send" in warning.text
    browser.find_element(By.LINK_TEXT, "No, choose another step").click()

    wait.until(EC.presence_of_element_located((By.ID, "fork-steps")))
    browser.find_element(By.LINK_TEXT, "Fork from step 2…").click()
    warning = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".plan-effects")))
    assert "send" in warning.text and "money" not in warning.text
    reused = browser.find_element(By.CSS_SELECTOR, "table.plan-reused tbody").text
    live = browser.find_element(By.CSS_SELECTOR, "table.plan-live tbody").text
    assert "acme.order.refund" in reused and "not called again" in reused
    assert "acme.mail.send" in live and "calls acme.mail.send again" in live
    full_page(browser, shots / "fork-confirm.png")
    assert Run.objects.count() == 1  # only shown

    browser.find_element(By.ID, "confirm-fork").click()
    assert f"Forked {run.id} from step 2 as {run.id}~1" in said(browser)
    assert browser.current_url.endswith(f"/admin/runs/run/{run.id}~1/change/")
    assert browser.find_element(By.CSS_SELECTOR, ".field-parent_link .readonly").text == \
        f"none (forked from {run.id} at step 2 by ops)"
    engine.drain()
    # What the page said: the mail sent again, the refund not paid again.
    assert (len(engine.fake.state["refunds"]), len(engine.fake.state["mail"])) == (1, 2)


def test_rerunning_a_failed_refund_shows_every_call_made_again(live_server, engine_for, browser, shots):
    engine = engine_for(refund_and_tell)
    person("ops", *OPERATOR_PERMS)
    engine.fake.fail_next("acme.mail.send", DriverError("mail down", retryable=False))
    run = engine.run("refund-and-tell")
    assert run.status == RunStatus.FAILED
    wait = WebDriverWait(browser, 20)
    log_in(browser, live_server.url, "ops", then=f"/admin/runs/run/{run.id}/change/")

    wait.until(EC.element_to_be_clickable((By.ID, "rerun-link"))).click()
    warning = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".plan-effects")))
    assert "money, send" in warning.text
    live = browser.find_element(By.CSS_SELECTOR, "table.plan-live tbody").text
    assert "acme.order.refund" in live and "acme.mail.send" in live and "driver_failed" in live
    assert Run.objects.count() == 1
    browser.find_element(By.ID, "confirm-rerun").click()
    assert f"Rerunning {run.id} as {run.id}~1" in said(browser)
    assert Run.objects.get(pk=f"{run.id}~1").source_run == run.id
    browser.get(f"{live_server.url}/admin/runs/run/{run.id}~1/change/")
    related = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".field-parent_link .readonly")))
    assert related.text == f"none (a rerun of {run.id} by ops)"  # not "-": the rerun was made from it, by ops


# -- one snapshot, followed live ------------------------------------------------------------------------


def test_a_run_page_followed_live_changes_its_breadcrumb_and_title_and_draws_its_end_once(
        live_server, engine_for, browser, shots):
    engine = engine_for(waits_for_shipping)
    person("root", superuser=True)
    run = engine.run("ship")
    wait = WebDriverWait(browser, 20)
    log_in(browser, live_server.url, "root", then=f"/admin/runs/run/{run.id}/change/")
    wait.until(EC.presence_of_element_located((By.ID, "run-now")))
    assert f"{run.id} (waiting)" in browser.find_element(By.CSS_SELECTOR, ".breadcrumbs").text
    assert f"{run.id} (waiting)" in browser.title
    browser.execute_script("window.sanomaMarker = 'same page'")

    services.send_message(run_id=run.id, topic="shipped", payload={"tracking": "X1"}, by="alice")  # elsewhere
    engine.drain()

    WebDriverWait(browser, 30, ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda b: "(finished)" in b.find_element(By.CSS_SELECTOR, ".breadcrumbs").text)
    assert browser.execute_script("return window.sanomaMarker") == "same page"  # never reloaded
    WebDriverWait(browser, 10).until(lambda b: f"{run.id} (finished)" in b.title)
    assert text_of(browser, "run-now").startswith("Finished ")
    end = browser.find_element(By.CSS_SELECTOR, "#graph li.sanoma-node.end")
    assert end.text == "finished"  # once: not "finished finished"
    assert browser.find_elements(By.ID, "send-message") == []  # an ended run takes no messages
    full_page(browser, shots / "run-live-ended.png")
