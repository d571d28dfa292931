"""The desk's journeys on the demo's own company and people, in a real browser (headless Chromium
through Selenium): the demo set up as `./demo` sets it up (sanoma_site/tests/demo_desk.py), then
each person clicks, types and waits for the page as they would, and never posts to a URL the page
does not lead to. One demo per test: each test is one person's (or a hand-over between people's)
journey through several pages.

- alice starts a refund with values the form refuses, then with good ones; finance-lead, with the
  runs list and the run's page open in tabs of their own, approves it from the inbox and sees both
  follow it to its end without a reload; ops forks it, seeing first what is done again.
- alice starts an await-shipment and sends the warehouse's message from its page; she cancels the
  demo's refund, saying why, and it leaves finance-lead's inbox.
- ops drifts, reads the plan and applies; the staff roles wait for sam, who approves them from his
  inbox; the apply finishes.
- At 1200 and 1280 px, with the navigation sidebar open, no list of the desk scrolls sideways, nor
  the run page's waterfall; at 800 px neither do the lists (runs, app versions, ledger records)
  and the credentials page.
- A relative moment ("just now") does not stay as it was while the page sits.

Needs Debian's `chromium` and `chromium-driver` and the `selenium` package; skipped with the reason
when one is missing. `SANOMA_SCREENSHOT_DIR` keeps the screenshots.
"""
from __future__ import annotations

from urllib.parse import urlsplit

from django.contrib.admin.utils import quote
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from changes.lifecycle.models import ChangeRun
from runs.approvals.permissions import grant_approver
from runs.engine import clock
from runs.models import Approval, ApprovalRequester, Run, RunMessage, RunStatus
from runs.tests import browser_support as support
from runs.tests.browser_support import (
    BROWSER_TESTS,
    EC,
    By,
    Keys,
    StaleElementReferenceException,
    WebDriverWait,
    approve,
    approve_from_inbox,
    full_page,
    inbox_rows,
    open_approval,
    open_inbox,
    page_fits,
    settled,
    sign_in,
    text_of,
    wait_for,
)
from sanoma_site.tests import demo_desk
from sanoma_site.tests.demo_desk import Demo

browser = support.browser
shots = support.shots
demo = demo_desk.demo
demo_worker = demo_desk.demo_worker
pytestmark = BROWSER_TESTS

WAIT = 60  # seconds: a live page reads itself again every 3 s; a loaded 2-core machine is slow


def waiter(driver, timeout: float = WAIT):
    return WebDriverWait(driver, timeout, ignored_exceptions=(StaleElementReferenceException,))


def mark_page(driver) -> None:
    """Leave a mark on this page: it is gone if the page is loaded again."""
    driver.execute_script("window.sanomaSamePage = 'yes'")


def same_page(driver) -> bool:
    return driver.execute_script("return window.sanomaSamePage") == "yes"


def said(driver) -> str:
    """The page's messages (Django's message list), waited for."""
    # Read inside the wait: a live refresh may redraw the list between finding it and reading it.
    return waiter(driver).until(lambda d: d.find_element(By.CSS_SELECTOR, "ul.messagelist").text)


def fill(driver, **values: str) -> None:
    for name, value in values.items():
        field_ = driver.find_element(By.ID, f"id_{name}")
        field_.clear()
        field_.send_keys(value)


def open_from_sidebar(driver, label: str) -> None:
    """The desk's link to a page: in the navigation sidebar, or on the home page's list of apps, waited
    for (a sign-in's click returns before the page it loads is there)."""
    def links(d) -> list:
        return d.find_elements(By.XPATH, f"//nav[@id='nav-sidebar']//th/a[normalize-space(text())='{label}']") or \
            d.find_elements(By.XPATH, f"//div[@id='content-main']//th/a[normalize-space(text())='{label}']")
    waiter(driver).until(links, f"no link {label!r} on the page")[0].click()


def run_row_status(driver, run_id: str) -> str:
    """The status cell of a run's row in the runs list."""
    row = driver.find_element(By.XPATH, f"//table[@id='result_list']//tr[.//a[normalize-space(text())='{run_id}']]")
    return row.find_element(By.CSS_SELECTOR, "td.field-status_badge, td.field-status").text


def run_id_of_page(driver) -> str:
    return driver.current_url.rstrip("/").split("/")[-2]


def test_a_refund_started_approved_from_the_inbox_and_forked_on_the_demo(
        live_server, demo: Demo, demo_worker, browser, shots):
    site = live_server.url
    wait = waiter(browser)

    # alice: the start form refuses a refund far above its ceiling on the field, and a missing order.
    sign_in(browser, site, "alice", then="/admin/")
    open_from_sidebar(browser, "Runs")
    wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, "ul.object-tools a[href$='/start/']"))).click()
    wait.until(EC.element_to_be_clickable((By.LINK_TEXT, "refund"))).click()
    wait.until(EC.presence_of_element_located((By.ID, "start_form")))
    fill(browser, order_id="", amount_cents="9000000000000000")
    browser.find_element(By.NAME, "_start").click()
    error = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".field-amount_cents .errorlist")))
    assert "is above the ceiling of 10,000.00 EUR that shop.order.refund declares" in error.text
    assert browser.find_element(By.CSS_SELECTOR, ".field-order_id .errorlist").text
    before = Run.objects.count()
    # Then good values: the run starts, held for finance-lead.
    fill(browser, order_id="1002", amount_cents="4200")
    browser.find_element(By.NAME, "_start").click()
    wait.until(EC.presence_of_element_located((By.ID, "ledger")))
    assert "Started refund as run" in said(browser)
    refund_id = run_id_of_page(browser)
    assert Run.objects.count() == before + 1
    wait_for(lambda: Approval.objects.filter(run_id=refund_id, status="pending").exists())

    # finance-lead: the runs list in this tab, the refund's page in a second, the inbox in a third.
    sign_in(browser, site, "finance-lead", then="/admin/")
    open_from_sidebar(browser, "Runs")
    wait.until(EC.presence_of_element_located((By.ID, "result_list")))
    list_tab = browser.current_window_handle
    assert "waiting" in settled(lambda: run_row_status(browser, refund_id)).lower()
    mark_page(browser)

    browser.switch_to.new_window("tab")
    run_tab = browser.current_window_handle
    browser.get(f"{site}/admin/runs/run/")  # a new tab on the runs list; the refund is clicked from it
    wait.until(EC.element_to_be_clickable((By.LINK_TEXT, refund_id))).click()
    wait.until(EC.presence_of_element_located((By.ID, "run-now")))
    assert "run.finished" not in text_of(browser, "ledger")
    mark_page(browser)

    browser.switch_to.new_window("tab")
    browser.get(f"{site}/admin/")
    open_inbox(browser, wait)
    summary = "Refund 42.00 EUR on order 1002"
    assert summary in settled(lambda: [r.text for r in inbox_rows(browser)])[0] or summary in browser.page_source
    open_approval(browser, wait, summary)
    assert browser.find_element(By.ID, "approval-starter").text == "alice"
    assert "is approved by finance-lead" in approve(browser, wait, "Order 1002 checked: refund it")

    # The run's page, never reloaded, follows the run to its end; so does the runs list.
    browser.switch_to.window(run_tab)
    wait.until(lambda b: "run.finished" in b.find_element(By.ID, "ledger").text)
    assert text_of(browser, "run-now").startswith("Finished ")
    assert same_page(browser)
    full_page(browser, shots / "demo-refund-finished.png")
    browser.switch_to.window(list_tab)
    wait.until(lambda b: "finished" in run_row_status(b, refund_id).lower())
    assert same_page(browser)

    # ops forks the finished refund from its last step, seeing first what is done again.
    sign_in(browser, site, "ops", then="/admin/")
    open_from_sidebar(browser, "Runs")
    wait.until(EC.element_to_be_clickable((By.LINK_TEXT, refund_id))).click()
    wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, "ul.object-tools a[href$='/fork/']"))).click()
    steps = wait.until(EC.presence_of_element_located((By.ID, "fork-steps")))
    forks = steps.find_elements(By.PARTIAL_LINK_TEXT, "Fork from step")
    assert len(forks) >= 2
    forks[0].click()  # from the first step: everything is done again, the money too
    warning = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".plan-effects")))
    assert "money" in warning.text and "send" in warning.text
    browser.find_element(By.LINK_TEXT, "No, choose another step").click()
    steps = wait.until(EC.presence_of_element_located((By.ID, "fork-steps")))
    steps.find_elements(By.PARTIAL_LINK_TEXT, "Fork from step")[-1].click()  # the last: the refund is not paid again
    warning = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".plan-effects")))
    assert "money" not in warning.text
    assert "shop.order.refund" in browser.find_element(By.CSS_SELECTOR, "table.plan-reused tbody").text
    full_page(browser, shots / "demo-fork-confirm.png")
    refunds = len(demo.shop.state["refunds"])
    browser.find_element(By.ID, "confirm-fork").click()
    assert f"Forked {refund_id} from step" in said(browser)
    fork_id = f"{refund_id}~1"
    assert browser.current_url.endswith(f"/admin/runs/run/{fork_id}/change/")
    wait.until(lambda b: "run.finished" in b.find_element(By.ID, "ledger").text)
    assert len(demo.shop.state["refunds"]) == refunds  # as the page said: no second refund

    # The fork keeps the business keys its reused steps tagged the run with: ops searches the runs
    # list for order 1002 and finds both runs; so does the API's `tag=`.
    open_from_sidebar(browser, "Runs")
    search = wait.until(EC.presence_of_element_located((By.ID, "searchbar")))
    search.clear()
    search.send_keys("1002", Keys.ENTER)
    wait.until(lambda b: "q=1002" in b.current_url)
    found = settled(lambda: [a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "#result_list a")])
    assert {f"/admin/runs/run/{refund_id}/change/", f"/admin/runs/run/{quote(fork_id)}/change/"} <= \
        {urlsplit(href).path for href in found}, found
    api = APIClient()
    token, _ = Token.objects.get_or_create(user=User.objects.get(username="ops"))
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    reply = api.get("/api/runs", {"tag": "order=1002"})
    assert reply.status_code == 200, reply.content
    assert {refund_id, fork_id} <= {r["run_id"] for r in reply.json()["results"]}, reply.json()


def test_a_message_sent_from_a_run_page_and_a_refund_cancelled_out_of_the_approvers_inbox_on_the_demo(
        live_server, demo: Demo, demo_worker, browser, shots):
    site = live_server.url
    wait = waiter(browser)
    refund = demo.runs["refund"]  # the demo's refund of 15.00 on order 1001, held for finance-lead
    wait_for(lambda: Approval.objects.filter(run_id=refund.id, status="pending").exists())

    # finance-lead has it in the inbox.
    sign_in(browser, site, "finance-lead", then="/admin/")
    assert wait.until(EC.presence_of_element_located((By.ID, "inbox-badge"))).text.lower() == "inbox 1"

    # alice starts an await-shipment from the start form and sends the warehouse's message from its page.
    sign_in(browser, site, "alice", then="/admin/")
    open_from_sidebar(browser, "Runs")
    wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, "ul.object-tools a[href$='/start/']"))).click()
    wait.until(EC.element_to_be_clickable((By.LINK_TEXT, "await-shipment"))).click()
    wait.until(EC.presence_of_element_located((By.ID, "start_form")))
    fill(browser, order_id="1002")
    browser.find_element(By.NAME, "_start").click()
    wait.until(EC.presence_of_element_located((By.ID, "ledger")))
    shipment_id = run_id_of_page(browser)
    wait_for(lambda: Run.objects.get(pk=shipment_id).waiting_for == "message")
    # The page follows the run to its wait; the send form is there once it waits.
    wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, "#send-message summary"))).click()
    assert browser.find_element(By.CSS_SELECTOR, "#send-message input[name=topic]").get_attribute("value") == "shipped"
    payload = browser.find_element(By.CSS_SELECTOR, "#send-message input[name=payload]")
    payload.clear()
    payload.send_keys('{"carrier": "posti", "tracking": "POSTI1002"}')
    browser.find_element(By.ID, "send-message-button").click()
    assert f"Sent to {shipment_id} on “shipped”" in said(browser)
    assert "403 Forbidden" not in browser.page_source and "You may not open this page" not in browser.page_source
    wait.until(lambda b: "run.finished" in b.find_element(By.ID, "ledger").text)
    [message] = RunMessage.objects.filter(run_id=shipment_id)
    assert (message.topic, message.sent_by) == ("shipped", "alice")
    full_page(browser, shots / "demo-message-sent.png")

    # alice cancels the demo's refund from its page, saying why.
    open_from_sidebar(browser, "Runs")
    wait.until(EC.element_to_be_clickable((By.LINK_TEXT, refund.id))).click()
    wait.until(EC.element_to_be_clickable((By.ID, "cancel-link"))).click()
    assert "withdrawn" in wait.until(EC.presence_of_element_located((By.ID, "cancel-withdraws"))).text
    assert "asked of finance-lead" in browser.find_element(By.ID, "content-main").text
    browser.find_element(By.ID, "id_reason").send_keys("The customer kept the parcel after all")
    browser.find_element(By.ID, "confirm-cancel").click()
    assert f"Cancelled {refund.id}" in said(browser)
    assert text_of(browser, "run-now").endswith("by alice: “The customer kept the parcel after all”.")

    # It has left finance-lead's inbox and badge.
    sign_in(browser, site, "finance-lead", then="/admin/")
    open_inbox(browser, wait)
    assert text_of(browser, "inbox-empty") == "Nothing waits for you to decide."
    assert text_of(browser, "inbox-badge").lower() == "inbox"
    assert Approval.objects.get(run_id=refund.id).status == "withdrawn"


def test_the_operator_drifts_plans_and_applies_on_the_demo_and_sam_lets_the_staff_roles_through(
        live_server, demo: Demo, demo_worker, browser, shots):
    site = live_server.url
    wait = waiter(browser)
    sign_in(browser, site, "ops", then="/admin/")
    wait.until(EC.presence_of_element_located((By.ID, "user-tools")))
    open_from_sidebar(browser, "Resources")
    assert "No drift run yet." in text_of(browser, "content-main")

    # Drift: the page follows the run and shows what differs and the plan, without a reload.
    drift_button = browser.find_element(By.ID, "run-drift")
    drift_button.click()
    wait.until(EC.staleness_of(drift_button))  # the page the click loads, not the one it left
    wait.until(EC.presence_of_element_located((By.ID, "run-drift")))
    mark_page(browser)
    wait.until(EC.presence_of_element_located((By.ID, "plan")))
    assert same_page(browser)
    plan = text_of(browser, "plan")
    for change in ("update shop.product mug", "create shop.product tote", "create shop.webhook orders_hook",
                   "create shop.staff_role sam_admin"):
        assert change in plan, plan
    assert "shop.staff_role.create: held for group:security" in plan and "denied" not in plan
    assert browser.find_elements(By.ID, "plan-refused") == []  # the policy lets operators apply
    apply_button = browser.find_element(By.ID, "apply")
    assert apply_button.get_attribute("value") == "Apply"
    full_page(browser, shots / "demo-resources-plan.png")

    # Apply: the run makes what is allowed and waits for sam on each staff role.
    apply_button.click()
    wait.until(EC.staleness_of(apply_button))  # the page the click loads, not the one it left
    wait.until(EC.presence_of_element_located((By.ID, "latest-apply")))
    mark_page(browser)
    wait_for(lambda: Approval.objects.filter(run__workflow="apply", status="pending").exists())
    [applying] = Run.objects.filter(workflow="apply")
    wait.until(lambda b: "waiting" in b.find_element(By.ID, "latest-apply").text)
    assert same_page(browser)
    # The page names whom the apply waits for, not "waiting (waiting for approval)".
    wait.until(lambda b: f"run {applying.id} is waiting for group:security to approve, started"
               in b.find_element(By.ID, "running").text)
    assert "(waiting for approval)" not in text_of(browser, "content-main")

    # sam lets the staff roles through from his inbox (each approval as it comes).
    message = approve_from_inbox(browser, site, "sam", "Create a Staff role: user finance-lead, role finance",
                                 "Access as declared")
    roles = ["finance-lead"]
    while True:
        assert "approved by sam" in message, message
        wait_for(lambda: Run.objects.get(pk=applying.pk).status == "finished"
                 or Approval.objects.filter(run=applying, status="pending").exists())
        if Run.objects.get(pk=applying.pk).status == "finished":
            break
        open_inbox(browser, wait)
        summary = settled(lambda: inbox_rows(browser)[0].find_element(By.CSS_SELECTOR, "strong.sanoma-summary").text)
        roles.append(summary.split("user ")[1].split(",")[0])
        open_approval(browser, wait, summary)
        message = approve(browser, wait, "Access as declared")
    assert roles == ["finance-lead"]  # one approval lets the apply's staff roles through together
    assert {s["username"] for s in demo.shop.state["staff"]} >= {"finance-lead", "sam", "support-lead", "alice"}
    assert len(demo.shop.state["webhooks"]) == 1  # made with the demo's made-up signing secret

    # ops sees the apply finished on the Resources page.
    sign_in(browser, site, "ops", then="/admin/")
    open_from_sidebar(browser, "Resources")
    assert "finished" in text_of(browser, "latest-apply")


def at_width(driver, width: int) -> None:
    """The window's inside `width` px wide (the viewport, as a person's window of that size has it)."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False})


def test_no_list_of_the_desk_scrolls_sideways_at_1200_and_1280_px_with_the_sidebar_open(
        live_server, demo: Demo, demo_worker, browser, shots):
    site = live_server.url
    wait = waiter(browser)
    refund = demo.runs["refund"]
    wait_for(lambda: Approval.objects.filter(run_id=refund.id, status="pending").exists())
    a_change_waits_for_its_merge_and_another_is_deployed()
    wide = {}
    for who, page, ready in (("finance-lead", "/admin/runs/approval/", "result_list"),
                             ("sam", "/admin/runs/approval/", "result_list"),
                             ("ops", "/admin/lifecycle/changerun/", "result_list"),
                             ("ops", "/admin/runs/run/", "result_list"),
                             ("ops", f"/admin/runs/run/{refund.id}/change/", "ledger")):
        sign_in(browser, site, who, then=page)
        wait.until(EC.presence_of_element_located((By.ID, ready)))
        for width in (1200, 1280):
            at_width(browser, width)
            browser.refresh()
            wait.until(EC.presence_of_element_located((By.ID, ready)))
            assert browser.find_element(By.ID, "nav-sidebar").is_displayed()  # the sidebar is open
            found = page_fits(browser) + words_broken(browser)
            if found:
                wide[f"{page} ({who}) at {width} px"] = found
            browser.save_screenshot(str(shots / f"fits-{width}-{who}-{page.strip('/').replace('/', '-')}.png"))
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

    # The run page's waterfall fits its box at 1280 px, and no label in it is cut.
    sign_in(browser, site, "ops", then=f"/admin/runs/run/{refund.id}/change/")
    wait.until(EC.presence_of_element_located((By.ID, "waterfall")))
    at_width(browser, 1280)
    browser.refresh()
    wait.until(EC.presence_of_element_located((By.ID, "waterfall")))
    found = waterfall_fits(browser)
    if found:
        wide["the waterfall at 1280 px"] = found
    browser.save_screenshot(str(shots / "fits-1280-waterfall.png"))

    # At 800 px (the sidebar hidden) the lists and the credentials page fit too.
    for who, page, ready in (("admin", "/admin/runs/run/", "result_list"),
                             ("admin", "/admin/credentials/credential/", "credentials"),
                             ("admin", "/admin/runs/appversion/", "changelist"),
                             ("admin", "/admin/runs/ledgerrecord/", "result_list"),
                             ("sam", "/admin/runs/approval/", "result_list"),
                             ("finance-lead", "/admin/runs/approval/", "result_list"),
                             ("admin", "/admin/lifecycle/changerun/", "result_list")):
        sign_in(browser, site, who, then=page)
        at_width(browser, 800)
        browser.refresh()
        wait.until(EC.presence_of_element_located((By.ID, ready)))
        # Every column in sight, and no word of a sentence cut in two ("thro ugh"): only long tokens
        # (ids, an operation's name after its dots) break.
        found = (page_fits(browser) + table_fits(browser, "credentials" if ready == "credentials" else "result_list")
                 + inlines_fit(browser) + words_broken(browser))
        if found:
            wide[f"{page} ({who}) at 800 px"] = found
        browser.save_screenshot(str(shots / f"fits-800-{who}-{page.strip('/').replace('/', '-')}.png"))
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

    # finance-lead approves the refund (1500 = 15.00 EUR on order 1001); at 800 px its run page's
    # approvals table, each column filled, fits, its operation's name whole or broken after a dot.
    approve_from_inbox(browser, site, "finance-lead", "Refund 15.00 EUR on order 1001", "ok, damaged parcel photo seen")
    sign_in(browser, site, "ops", then=f"/admin/runs/run/{refund.id}/change/")
    at_width(browser, 800)
    browser.refresh()
    wait.until(lambda b: "finance-lead" in b.find_element(By.CSS_SELECTOR, "td.field-decided_by_said").text)
    found = page_fits(browser) + inlines_fit(browser) + words_broken(browser)
    if found:
        wide["the run page at 800 px"] = found
    browser.save_screenshot(str(shots / "fits-800-run-page.png"))
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    assert wide == {}, wide


HEAD = "ee7f8886af34dabf951f7f4552929a161a5265da"
DEPLOYED = "acme@" + "5f1c2a9b0d3e" * 5 + "77aa"  # an app version: the config's content hash


def a_change_waits_for_its_merge_and_another_is_deployed() -> None:
    """What a change leaves on the desk as the change workflow writes it: a change held at its merge
    for the owners (its summary and what it lets through name the 40-hex commit), and one deployed
    on an app version named by its 64-hex hash."""
    now = clock.now()
    for run_id, status, state in (("change-9e80ea8cab0c4186980a", RunStatus.WAITING, "checks_passed"),
                                  ("change-0b7d1c2e3f4a5b6c7d8e", RunStatus.FINISHED, "deployed")):
        Run.objects.create(id=run_id, workflow="change", app_version=DEPLOYED, status=status, started_by="alice",
                           input={"branch": "dearer-mug", "title": "Mug dearer"}, created_at=now, updated_at=now,
                           waiting_for="approval" if status == RunStatus.WAITING else "")
        deployed = state == "deployed"
        ChangeRun.objects.create(run_id=run_id, repo_url="/srv/acme.git", branch="dearer-mug", base="main",
                                 title="Mug dearer", opened_by="alice", opened_at=now, change_code="c" * 64,
                                 state=state, head_sha=HEAD, updated_at=now, merged_sha=HEAD if deployed else "",
                                 deployed_revision=HEAD if deployed else "",
                                 deployed_version=DEPLOYED if deployed else "")
        if not deployed:
            approval = Approval.objects.create(
                run_id=run_id, approval_id="approval-1", seq=5, title="Merge a change to the company's repo",
                approver="group:owners", requested_by=ApprovalRequester.POLICY, op="sanoma.change.merge",
                op_input={"url": "/srv/acme.git", "branch": "dearer-mug", "head_sha": HEAD, "base": "main",
                          "work_in_flight": "leaves 3 parked runs as they are "
                                            "(the head does not change their version)"},
                covers=[f"sanoma.change.merge@dearer-mug@{HEAD}"], requested_at=now)
            grant_approver(approval)
            Run.objects.filter(pk=run_id).update(has_approvals=True)


def inlines_fit(driver) -> list[str]:
    """A run page's table (its approvals, its steps) wider than its box."""
    return [str(item) for item in driver.execute_script("""
        return [...document.querySelectorAll('#content-main .inline-group')]
            .filter(box => box.scrollWidth > box.clientWidth + 1)
            .map(box => `${box.id}: ${box.scrollWidth} > ${box.clientWidth}`);
    """)]


def words_broken(driver) -> list[str]:
    """The words of the lists' and the run page tables' cells that a line break cuts in two: a word
    of a sentence (letters; it may break at its hyphen) set on more than one line. Ids, links, code
    and JSON are tokens, which may break."""
    return [str(item) for item in driver.execute_script(r"""
        const broken = [];
        const cells = document.querySelectorAll('#result_list td, #result_list th, #content-main .inline-group td');
        const WORD = /^[("“]?[A-Za-z'-]+[)",.:;”!?]*$/;
        for (const cell of cells) {
          const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
          for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            if (node.parentElement.closest('code, pre, a, time, .sanoma-token, .sanoma-id')) { continue; }
            for (const token of node.textContent.matchAll(/\S+/g)) {
              if (!WORD.test(token[0])) { continue; }
              for (const part of token[0].matchAll(/[A-Za-z']{2,}/g)) {
              const found = {index: token.index + part.index, 0: part[0]};
              const range = document.createRange();
              range.setStart(node, found.index);
              range.setEnd(node, found.index + found[0].length);
              const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
              if (tops.size > 1) { broken.push(`${cell.className}: ${found[0]}`); }
              }
            }
          }
        }
        return broken;
    """)]


def waterfall_fits(driver) -> list[str]:
    """What is too wide in the waterfall: its rows, or a label cut by its own box."""
    return [str(item) for item in driver.execute_script("""
        const wide = [];
        const box = document.querySelector('#waterfall .sanoma-wf');
        if (box.scrollWidth > box.clientWidth + 1) {
          wide.push(`the waterfall: ${box.scrollWidth} > ${box.clientWidth}`);
        }
        const right = box.getBoundingClientRect().right;
        for (const label of document.querySelectorAll('#waterfall .sanoma-wf-gap-label, #waterfall .sanoma-wf-label')) {
          if (label.scrollWidth > label.clientWidth + 1 || label.getBoundingClientRect().right > right + 1) {
            wide.push(`a label: ${label.textContent.trim()}`);
          }
        }
        return wide;
    """)]


def table_fits(driver, table_id: str) -> list[str]:
    """A table wider than its box (a column cut, or scrolled inside)."""
    return [str(item) for item in driver.execute_script("""
        const table = document.getElementById(arguments[0]);
        if (!table) { return []; }  // a list with no rows has no table
        const box = table.parentElement;
        return table.getBoundingClientRect().width > box.clientWidth + 1
            ? [`${arguments[0]}: ${table.getBoundingClientRect().width} > ${box.clientWidth}`] : [];
    """, table_id)]


LATER = """
const real = Date.now.bind(Date);
Date.now = () => real() + arguments[0] * 1000;
"""
"""The page's clock moved on by the seconds given: as if the page had sat open that long."""


def relative_times(driver, css: str) -> list[str]:
    return [" ".join(t.text.replace("\xa0", " ").split()) for t in driver.find_elements(By.CSS_SELECTOR, css)]


def test_a_relative_moment_does_not_stay_just_now_while_the_page_sits(
        live_server, demo: Demo, demo_worker, browser, shots):
    """A page that no longer reads itself (an ended run's page; a list while a row is ticked) kept
    its "(just now)" for as long as it was open."""
    site = live_server.url
    wait = waiter(browser)
    reprice = demo.runs["reprice"]  # finished at once: its page is not live
    wait_for(lambda: Run.objects.get(pk=reprice.id).status == "finished")
    sign_in(browser, site, "ops", then="/admin/")
    open_from_sidebar(browser, "Runs")
    wait.until(EC.element_to_be_clickable((By.LINK_TEXT, reprice.id))).click()
    now = wait.until(EC.presence_of_element_located((By.ID, "run-now")))
    assert "(just now)" in now.text
    browser.execute_script(LATER, 5 * 60 + 10)
    wait.until(lambda b: "(5 minutes ago)" in " ".join(b.find_element(By.ID, "run-now").text.split()))
    assert "(just now)" not in text_of(browser, "run-now")

    # The runs list, paused while a row is ticked: its moments still move on.
    browser.back()
    wait.until(EC.presence_of_element_located((By.ID, "result_list")))
    browser.find_element(By.CSS_SELECTOR, f"input.action-select[value='{reprice.id}']").click()
    assert all(t.endswith("(just now)") for t in relative_times(browser, "#result_list td time"))
    browser.execute_script(LATER, 2 * 3600 + 60)
    wait.until(lambda b: all(t.endswith("(2 hours ago)") for t in relative_times(b, "#result_list td time")))
    assert browser.execute_script("return document.body.dataset.livePaused") == "ticked"
