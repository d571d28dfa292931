"""The desk's Versions page in a real browser (headless Chromium through Selenium): an operator sees
each deploy version's state, a pinned version's commit and why it has no worker, follows its link to
the runs it holds (the run list's `?version=`), and from its page reaches the fork of a pinned run.

Needs Debian's `chromium` and `chromium-driver` and the `selenium` package; skipped with the reason
when one is missing. `SANOMA_SCREENSHOT_DIR` keeps the screenshots (default: the test's temp dir).
"""
from __future__ import annotations

from datetime import timedelta

from runs.engine import clock
from runs.models import AppVersion, Run, RunStatus
from runs.tests import browser_support as support
from runs.tests.browser_support import BROWSER_TESTS, EC, By, StaleElementReferenceException, WebDriverWait, log_in
from runs.tests.browser_support import staff_user as _staff_user
from runs.versions import UNCOMMITTED

browser = support.browser
shots = support.shots

pytestmark = BROWSER_TESTS
LANDS = 45


def operator(username: str = "olga"):
    user = _staff_user(username)
    user.is_superuser = True
    user.save()
    return user


def deploy(version: str, *, workflows: dict[str, str], minutes_ago: int, commit: str = "", error: str = "") -> None:
    at = clock.now() - timedelta(minutes=minutes_ago)
    AppVersion.objects.create(version=version, first_started_at=at, promoted_at=at, commit=commit, root="/srv/acme",
                              workflows=workflows, worker_error=error)


def run(run_id: str, workflow_version: str, status: str = RunStatus.WAITING) -> None:
    now = clock.now()
    Run.objects.create(id=run_id, workflow=workflow_version.split("@")[0], app_version=workflow_version, input={},
                       started_by="olga", status=status, created_at=now, updated_at=now)


def until(driver, condition, seconds: float = LANDS):
    return WebDriverWait(driver, seconds, ignored_exceptions=(StaleElementReferenceException,)).until(condition)


def row_of(driver, version: str):
    for row in driver.find_elements(By.CSS_SELECTOR, "#result_list tbody tr"):
        if row.find_elements(By.LINK_TEXT, version):
            return row
    raise AssertionError(f"no row for {version}: {driver.find_element(By.ID, 'content-main').text}")


def test_an_operator_sees_a_pinned_version_and_follows_it_to_its_runs(live_server, browser, shots):
    operator("olga")
    deploy("acme@old", workflows={"refund": "refund@1111", "report": "report@aaaa"}, minutes_ago=60,
           commit="1f" * 20, error="its config root /srv/acme is not in a git repository any more")
    deploy("acme@mid", workflows={"refund": "refund@2222", "report": "report@aaaa"}, minutes_ago=30, commit="2e" * 20)
    deploy("acme@new", workflows={"refund": "refund@3333", "report": "report@aaaa"}, minutes_ago=5, commit="3d" * 20)
    run("refund-pinned", "refund@1111")
    run("report-live", "report@aaaa", status=RunStatus.QUEUED)
    run("refund-live", "refund@3333")

    log_in(browser, live_server.url, "olga", then="/admin/")
    until(browser, EC.element_to_be_clickable((By.LINK_TEXT, "App versions"))).click()
    until(browser, EC.presence_of_element_located((By.ID, "result_list")))
    assert "Versions" in browser.find_element(By.CSS_SELECTOR, "#content h1").text
    old = row_of(browser, "acme@old").text
    assert "pinned-only" in old and "1f1f1f1f1f1f" in old and "1 unfinished" in old, old
    assert "not in a git repository any more" in old, old
    assert "live" in row_of(browser, "acme@new").text and "2 unfinished" in row_of(browser, "acme@new").text
    assert "unused" in row_of(browser, "acme@mid").text
    browser.save_screenshot(str(shots / "versions.png"))

    row_of(browser, "acme@old").find_element(By.CSS_SELECTOR, "a.version-runs").click()
    until(browser, lambda b: "version=acme%40old" in b.current_url or "version=acme@old" in b.current_url)
    listed = until(browser, EC.presence_of_element_located((By.ID, "result_list"))).text
    assert "refund-pinned" in listed and "refund-live" not in listed and "report-live" not in listed, listed
    browser.save_screenshot(str(shots / "versions-runs.png"))

    browser.back()
    until(browser, EC.presence_of_element_located((By.ID, "result_list")))
    row_of(browser, "acme@old").find_element(By.LINK_TEXT, "acme@old").click()
    until(browser, EC.presence_of_element_located((By.LINK_TEXT, "fork onto the latest version…"))).click()
    until(browser, lambda b: "/admin/runs/run/refund-pinned/fork/" in b.current_url)


def test_a_version_deployed_from_uncommitted_changes_says_it_has_no_commit_and_why(live_server, browser):
    operator("olga")
    deploy("acme@dirty", workflows={"refund": "refund@1111"}, minutes_ago=60, error=UNCOMMITTED)
    deploy("acme@new", workflows={"refund": "refund@3333"}, minutes_ago=5, commit="3d" * 20)
    run("refund-pinned", "refund@1111")
    log_in(browser, live_server.url, "olga", then="/admin/runs/appversion/")
    until(browser, EC.presence_of_element_located((By.ID, "result_list")))
    dirty = row_of(browser, "acme@dirty").text
    assert "pinned-only" in dirty and "(none: deployed from uncommitted changes)" in dirty, dirty
    assert "no commit holds this code" in dirty and "forked or cancelled" in dirty, dirty
    row_of(browser, "acme@dirty").find_element(By.LINK_TEXT, "acme@dirty").click()
    said = until(browser, EC.presence_of_element_located((By.LINK_TEXT, "fork onto the latest version…")))
    assert said is not None
    page = browser.find_element(By.ID, "content").text
    assert "No worker can run them (no commit holds this code): migrate them with a patch marker" in page, page


def test_a_version_that_is_not_one_lists_no_runs_and_says_so(live_server, browser):
    operator("olga")
    deploy("acme@new", workflows={"refund": "refund@3333"}, minutes_ago=5)
    run("refund-live", "refund@3333")
    log_in(browser, live_server.url, "olga", then="/admin/runs/run/?version=acme@nope")
    until(browser, EC.presence_of_element_located((By.CSS_SELECTOR, "ul.messagelist li")))
    assert "“acme@nope” is not a deploy version" in browser.find_element(By.CSS_SELECTOR, "ul.messagelist").text
    assert "refund-live" not in browser.find_element(By.ID, "content-main").text
