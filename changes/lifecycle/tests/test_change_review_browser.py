"""Opening a change and approving its merge in a real browser (headless Chromium through Selenium),
as the two people do it, on the embedded git remote with the change's checks run for real:

- alice opens a change with a typo in the branch's name: the form refuses it on the branch field,
  naming the branch and the branches there are, and nothing opens; she fixes it and opens it.
- sam, an owner, follows the badge to the inbox, where the merge reads as what it merges and what
  it does to the work in flight, and links to its change; on the approval's page he reads the
  change's checks, its plan, its *Work in flight* (the company's one parked `greet` run: the change
  appends a step after its wait, so it migrates) and its diff, and approves; the change merges.

Needs Debian's `chromium` and `chromium-driver` and the `selenium` package; skipped with the reason
when one is missing. `SANOMA_SCREENSHOT_DIR` keeps the screenshots.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from changes.lifecycle.models import ChangeRun
from changes.lifecycle.tests.gitco import git, gitco_site, push
from runs import services as run_services
from runs.config.resolution import ResolvedConfig
from runs.engine.drain import drain
from runs.models import Approval, DecisionMessage, Run
from runs.tests import browser_support as support
from runs.tests.browser_support import (
    BROWSER_TESTS,
    EC,
    By,
    StaleElementReferenceException,
    WebDriverWait,
    approve,
    full_page,
    open_approval,
    open_inbox,
    sign_in,
)
from runs.tests.browser_support import wait_for as wait_until

browser = support.browser
shots = support.shots
pytestmark = BROWSER_TESTS


GREET = '''\
"""Wait to be greeted."""
from pydantic import BaseModel

from runs.authoring import Ctx, define_workflow


class GreetInput(BaseModel):
    name: str


def run(ctx: Ctx, input: GreetInput):
    said = ctx.wait_message("hello")
    return {"said": said}


greet = define_workflow(name="greet", title="Wait to be greeted", input=GreetInput, run=run)
'''


@pytest.fixture
def site(tmp_path: Path, transactional_db) -> Iterator[tuple[Path, Path, ResolvedConfig]]:
    """The gitco company (see gitco.gitco_site) with a workflow that waits for a message; alice and
    sam sign in with their usernames. `transactional_db`: the worker thread, the change's checks
    and its proof (processes of their own) read what the test writes."""
    with gitco_site(tmp_path, {"workflows/greet.py": GREET}) as made:
        for user in get_user_model().objects.filter(username__in=["alice", "sam"]):
            user.is_staff = True
            user.set_password(user.username)
            user.save()
        yield made


@pytest.fixture
def worker(site) -> Iterator[None]:
    """A stand-in for `manage.py worker`: runs what is queued (the checks in their own process) and
    applies decisions as they come."""
    config = site[2]
    stop = threading.Event()

    def work() -> None:
        try:
            while not stop.is_set():
                if (Run.objects.filter(status="queued").exists()
                        or DecisionMessage.objects.filter(applied=False).exists()):
                    drain(config)
                time.sleep(0.05)
        finally:
            connection.close()

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=120)


def open_form(driver, wait, branch: str, title: str) -> None:
    wait.until(EC.presence_of_element_located((By.ID, "open_change_form")))
    for name, value in (("branch", branch), ("title", title)):
        field = driver.find_element(By.ID, f"id_{name}")
        field.clear()
        field.send_keys(value)
    driver.find_element(By.NAME, "_open").click()


def wait_for(condition) -> None:
    """The change's checks run for real: up to three minutes on a loaded machine."""
    wait_until(condition, timeout=180.0)


def test_an_owner_approves_a_merge_seeing_its_checks_plan_work_in_flight_and_diff(live_server, site, worker, browser,
                                                                                 shots):
    remote, clone, config = site
    # Work in flight: a run of `greet`, parked on its message (the worker thread starts it).
    parked = run_services.start(workflow="greet", input={"name": "ada"}, started_by="alice", config=config)
    wait_for(lambda: Run.objects.filter(pk=parked.id, waiting_for="message").exists())
    head = push(clone, "say-hello", {"workflows/greet.py": GREET.replace(
        '    return {"said": said}', '    ctx.sleep(seconds=1)\n    return {"said": said}')}, "Say hello")
    wait = WebDriverWait(browser, 60, ignored_exceptions=(StaleElementReferenceException,))

    # A typo in the branch's name: refused on the field, naming it and the branches there are.
    sign_in(browser, live_server.url, "alice", then="/admin/lifecycle/changerun/open/")
    open_form(browser, wait, "say-helo", "Say hello")
    error = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, ".field-branch .errorlist")))
    assert "has no branch 'say-helo' (its branches: main, say-hello)" in error.text
    assert "Nothing was opened." in browser.find_element(By.CSS_SELECTOR, "p.errornote").text
    full_page(browser, shots / "open-change-no-branch.png")
    assert not ChangeRun.objects.exists() and not Run.objects.filter(workflow="change").exists()
    open_form(browser, wait, "say-hello", "Say hello")
    wait.until(EC.presence_of_element_located((By.ID, "change")))
    [change] = ChangeRun.objects.all()

    # The worker checks it; the policy holds the merge for the owners.
    wait_for(lambda: Approval.objects.filter(run_id=change.run_id, status="pending").exists())

    sign_in(browser, live_server.url, "sam", then="/admin/")
    open_inbox(browser, wait)
    summary = f"Merge say-hello ({head[:12]}) into main: migrates 1 parked run"  # the commit's first 12
    row = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "#result_list tbody tr")))
    assert summary in row.text and "the change: its checks, plan and diff" in row.text
    full_page(browser, shots / "inbox-merge.png")

    # What sam lets merge: each check with its result, the plan, the work in flight, the diff against main.
    open_approval(browser, wait, summary)
    checks = [(r.find_element(By.TAG_NAME, "th").text, r.find_elements(By.TAG_NAME, "td")[0].text)
              for r in browser.find_elements(By.CSS_SELECTOR, "#checks tr.sanoma-check")]
    assert checks == [("config", "ok"), ("django", "ok"), ("lint", "ok"), ("scenarios", "ok"), ("declared", "ok"),
                      ("in_flight", "ok")]
    assert "Nothing to plan" in browser.find_element(By.ID, "plan").text
    flight = browser.find_element(By.ID, "in-flight")
    caption = " ".join(flight.find_element(By.TAG_NAME, "caption").get_attribute("textContent").split())
    assert caption == "Work in flight: migrates 1 parked run"
    [moved] = flight.find_elements(By.CSS_SELECTOR, "tr.in-flight")
    cells = [c.text for c in moved.find_elements(By.TAG_NAME, "td")]
    assert cells[:3] == ["migrates", parked.id, "greet"], cells
    # From its version to the head's, the one step it made (its wait) replayed from the record.
    assert cells[3].startswith(f"{parked.app_version} → ") and cells[3].endswith(", 1 step replayed"), cells
    diff = browser.find_element(By.ID, "diff")
    caption = " ".join(diff.find_element(By.TAG_NAME, "caption").get_attribute("textContent").split())
    assert caption == "The diff against main: 1 file, +1 −0"  # as written; the page shows captions in capitals
    assert [c.text for c in diff.find_elements(By.CSS_SELECTOR, "tr.diff-file td")] == [
        "modified", "workflows/greet.py", "+1", "−0"]
    assert "+    ctx.sleep(seconds=1)" in browser.find_element(By.ID, "patch").text
    assert browser.find_element(By.ID, "change-link").get_attribute("href").endswith(
        f"/admin/lifecycle/changerun/{change.run_id}/change/")
    full_page(browser, shots / "approval-merge.png")

    message = approve(browser, wait, "Checked the diff: merge it")
    assert "approved by sam" in message or "still pending" in message
    wait_for(lambda: ChangeRun.objects.get(pk=change.run_id).merged_sha != "")

    # The change's own page has the same table; its run link leads to the parked run.
    browser.find_element(By.ID, "change-link").click()
    wait.until(EC.presence_of_element_located((By.ID, "change-merge")))
    link = browser.find_element(By.CSS_SELECTOR, "#in-flight tr.in-flight.migrates td.run a")
    assert link.text == parked.id and link.get_attribute("href").endswith(f"/admin/runs/run/{parked.id}/change/")
    wait.until(lambda b: "merged as" in b.find_element(By.ID, "change-merge").text)
    assert git("rev-parse", "main", cwd=remote) == ChangeRun.objects.get(pk=change.run_id).merged_sha
