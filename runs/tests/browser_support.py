"""What every browser test of the desk shares (headless Chromium through Selenium): the skip marks, the
`browser` and `shots` fixtures, signing in as a person does, and approving from the inbox.

A browser test module takes it in one import:

    from runs.tests.browser_support import BROWSER_TESTS, By, EC, WebDriverWait, browser, shots
    pytestmark = BROWSER_TESTS

Needs Debian's `chromium` and `chromium-driver` and the `selenium` package; the tests are skipped
with the reason when one is missing. `SANOMA_SCREENSHOT_DIR` keeps the screenshots (default: the
test's temp dir).
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from company.resources import staff as company_staff
from runs.config.registry import set_config
from runs.config.resolution import load_config
from runs.engine.drain import drain
from runs.models import DecisionMessage, Run
from runs.seed import seed_declared
from runs.testing import make_user
from runs.tests import chromium

try:
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as _selenium_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    HAVE_SELENIUM = True
except ImportError:  # pragma: no cover - depends on the machine; every test here is skipped then
    HAVE_SELENIUM = False
    StaleElementReferenceException = WebDriverException = Exception  # type: ignore[assignment,misc]
    By = Keys = _selenium_conditions = WebDriverWait = None  # type: ignore[assignment,misc]

# ChromeDriver 156 may answer a question about an element of the page being left with "Node with
# given id does not belong to the document" rather than as a stale element: both mean it is gone.
_GONE = "does not belong to the document"


def _staleness_of(element: Any) -> Any:
    """selenium's `staleness_of`, taking ChromeDriver's other word for an element that is gone."""
    def gone(driver: Any) -> bool:
        try:
            element.is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as err:
            if _GONE in str(err):
                return True
            raise
        return False

    return gone


class _Conditions:
    """selenium's expected conditions (`EC.presence_of_element_located`, ...), `staleness_of` as above."""

    staleness_of = staticmethod(_staleness_of)

    def __getattr__(self, name: str) -> Any:
        return getattr(_selenium_conditions, name)


EC: Any = _Conditions() if HAVE_SELENIUM else None

CHROMIUM, CHROMEDRIVER, FLAGS = chromium.CHROMIUM, chromium.CHROMEDRIVER, chromium.FLAGS

BROWSER_TESTS = [
    pytest.mark.browser,
    pytest.mark.skipif(not HAVE_SELENIUM, reason="selenium is not installed (pip install selenium)"),
    pytest.mark.skipif(
        not (CHROMIUM and CHROMEDRIVER),
        reason="Chromium and ChromeDriver are not installed (apt-get install -y chromium chromium-driver)",
    ),
]
"""The marks of a browser test module: `pytestmark = BROWSER_TESTS`."""

PASSWORD = "correct-horse-battery"


@pytest.fixture
def browser(shared_chromium):
    """Chromium, as new: the session's one (see runs/tests/chromium.py), its cookies, stored data and
    pages from earlier tests gone, one window of 1400x1100."""
    driver = shared_chromium.fresh()
    try:
        yield driver
    finally:
        shared_chromium.blank()


@pytest.fixture
def shots(tmp_path) -> Path:
    folder = Path(os.environ.get("SANOMA_SCREENSHOT_DIR") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def full_page(browser, file: Path) -> None:
    """A screenshot of the whole page, not only the window."""
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1400, min(max(height, 800), 6000))
    browser.save_screenshot(str(file))
    browser.set_window_size(1400, 1100)


def staff_user(username: str):
    """A user who may sign in to the admin with PASSWORD."""
    user = make_user(username)
    user.is_staff = True
    user.set_password(PASSWORD)
    user.save()
    return user


def log_in(browser, site: str, username: str, *, then: str) -> None:
    """The admin's login page, filled in with PASSWORD."""
    browser.get(f"{site}/admin/login/?next={then}")
    browser.find_element(By.NAME, "username").send_keys(username)
    browser.find_element(By.NAME, "password").send_keys(PASSWORD)
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()


def sign_in(driver, site: str, username: str, *, then: str, password: str | None = None) -> None:
    """The admin's login page, filled in as a person does, after signing out of whoever was signed in.
    The password is the username unless given (as the demo's people have it)."""
    driver.delete_all_cookies()
    driver.get(f"{site}/admin/login/?next={then}")
    driver.find_element(By.NAME, "username").send_keys(username)
    driver.find_element(By.NAME, "password").send_keys(password if password is not None else username)
    driver.find_element(By.CSS_SELECTOR, "input[type=submit]").click()


def text_of(browser, element_id: str) -> str:
    """An element's text on a page that swaps its content in place: read again if it was swapped."""
    for _ in range(5):
        try:
            return browser.find_element(By.ID, element_id).text
        except StaleElementReferenceException:
            time.sleep(0.1)
    return browser.find_element(By.ID, element_id).text


def settled(read):
    """What `read()` answers on a page that swaps its content in place every few seconds (the lists
    are live): read again when an element read a moment ago was swapped out."""
    for _ in range(20):
        try:
            return read()
        except StaleElementReferenceException:
            time.sleep(0.1)
    return read()


def wait_for(condition, timeout: float = 60.0) -> None:
    """Wait until `condition()` holds (what the database says, say), failing after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def inbox_rows(driver) -> list:
    return driver.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")


def open_inbox(driver, wait) -> None:
    """Follow the header's Inbox badge to the approvals inbox."""
    wait.until(EC.presence_of_element_located((By.ID, "inbox-badge"))).click()
    wait.until(EC.presence_of_element_located((By.ID, "changelist")))


def open_approval(driver, wait, summary: str) -> None:
    """In the inbox: open the approval whose row reads `summary`, and wait for its Approve button."""
    wait.until(EC.element_to_be_clickable((By.LINK_TEXT, summary))).click()
    wait.until(EC.presence_of_element_located((By.ID, "approve-button")))


def approve(driver, wait, note: str) -> str:
    """On an approval's page: type the note, press Approve; the message the page answers with."""
    driver.find_element(By.ID, "id_note").send_keys(note)
    driver.find_element(By.ID, "approve-button").click()
    return wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "ul.messagelist li"))).text


def approve_from_inbox(driver, site: str, username: str, summary: str, note: str, *,
                       password: str | None = None, timeout: float = 30, looking=None) -> str:
    """The approver's steps: sign in, follow the badge to the inbox, open the approval whose row reads
    `summary`, (`looking(driver)`: what they check on its page first), approve it with `note`.
    The message the page answers with."""
    wait = WebDriverWait(driver, timeout, ignored_exceptions=(StaleElementReferenceException,))
    sign_in(driver, site, username, then="/admin/", password=password)
    open_inbox(driver, wait)
    open_approval(driver, wait, summary)
    if looking is not None:
        looking(driver)
    return approve(driver, wait, note)


def worker_for(engine, stop: threading.Event) -> threading.Thread:
    """A stand-in worker: applies decisions as they are sent, like `manage.py worker` would."""

    def work() -> None:
        try:
            while not stop.is_set():
                if DecisionMessage.objects.filter(applied=False).exists():
                    engine.drain()
                time.sleep(0.05)
        finally:
            connection.close()

    return threading.Thread(target=work, daemon=True)


def page_fits(driver) -> list[str]:
    """What scrolls sideways on the page: the page itself, or a list's box; empty when nothing does."""
    found: list[Any] = driver.execute_script("""
        const wide = [];
        const root = document.documentElement;
        if (root.scrollWidth > window.innerWidth) { wide.push(`the page: ${root.scrollWidth} > ${window.innerWidth}`); }
        const boxes = '#content-main .results, #content-main fieldset.module, #changelist';
        for (const box of document.querySelectorAll(boxes)) {
          if (box.scrollWidth > box.clientWidth + 1) {
            wide.push(`${box.id || box.className}: ${box.scrollWidth} > ${box.clientWidth}`);
          }
        }
        return wide;
    """)
    return [str(item) for item in found]


LOADS = 30  # seconds a page may take to load on a loaded 2-core machine (a bound: the wait ends when it has)


def until(driver, condition, seconds: float = LOADS):
    """Wait (boundedly) for `condition` on the page, through elements replaced while it loads."""
    return WebDriverWait(driver, seconds, ignored_exceptions=(StaleElementReferenceException,)).until(condition)


def click_and_load(driver, link) -> None:
    """Click a link that loads another changelist page, and wait until the new page is there."""
    old = driver.find_element(By.TAG_NAME, "html")
    link.click()
    until(driver, EC.staleness_of(old))
    until(driver, EC.presence_of_element_located((By.ID, "result_list")))


__all__ = ["LOADS", "click_and_load", "until",
           "BROWSER_TESTS", "CHROMEDRIVER", "CHROMIUM", "EC", "FLAGS", "HAVE_SELENIUM", "PASSWORD", "By", "Keys",
           "StaleElementReferenceException", "WebDriverWait", "approve", "approve_from_inbox", "browser", "full_page",
           "inbox_rows", "log_in", "open_approval", "open_inbox", "page_fits", "settled", "shots", "sign_in",
           "staff_user", "text_of", "wait_for", "worker_for"]


COMPANY = Path(__file__).resolve().parents[2] / "company"


@contextmanager
def example_company(fake_dir: Path | None = None) -> Iterator[Any]:
    """The example company, as the site's config for the block, with the demo's people (each one's
    password is their name): on its fakes kept in `fake_dir`, or on its real drivers without one."""
    config = load_config(COMPANY, fakes="instance", fake_dir=fake_dir) if fake_dir else load_config(COMPANY)
    set_config(config)
    seed_declared(vars(company_staff).values())
    try:
        yield config
    finally:
        set_config(None)


@contextmanager
def standin_worker(config: Any) -> Iterator[None]:
    """A stand-in for `manage.py worker` for the block: runs what is queued and applies decisions as they come."""
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
        thread.join(timeout=30)
