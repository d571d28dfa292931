"""One headless Chromium for the whole test session, handed to each browser test as if new.

Starting Chromium and its driver costs seconds on a loaded 2-core machine, once per browser test
when each made its own. The session keeps one (`shared_chromium` in the root conftest) and the
`browser` fixture (runs/tests/test_admin_browser.py) gives it to a test as a fresh one would be:
no cookies, no stored data, no page from an earlier test still reading itself, one window of the
usual size. A driver that no longer answers is replaced.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
WINDOW = (1400, 1100)
FLAGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", f"--window-size={WINDOW[0]},{WINDOW[1]}",
    "--password-store=basic",
)
# No saved passwords, no autofill: a login form a test types into is empty whatever an earlier test typed.
PREFS = {"credentials_enable_service": False, "profile.password_manager_enabled": False,
         "autofill.profile_enabled": False}


def start(profile: Path) -> Any:
    """A new headless Chromium through its driver, its profile in `profile`."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert CHROMIUM is not None and CHROMEDRIVER is not None  # the browser tests are skipped otherwise
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_experimental_option("prefs", PREFS)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(30)
    return driver


class SharedChromium:
    """The session's Chromium, started on first use, reset between tests, replaced when it died."""

    def __init__(self) -> None:
        self.driver: Any = None
        self.profiles: list[Path] = []

    def _start(self) -> Any:
        profile = Path(tempfile.mkdtemp(prefix="sanoma-chromium-"))
        self.profiles.append(profile)
        self.driver = start(profile)
        return self.driver

    def _alive(self) -> bool:
        try:
            self.driver.window_handles  # noqa: B018 (a round trip to the driver)
            return True
        except Exception:
            return False

    def fresh(self) -> Any:
        """The driver as a new one would be: a blank page, one window of the usual size, nothing stored."""
        if self.driver is None or not self._alive():
            self.quit()
            return self._start()
        try:
            self.blank()
            self.driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
            self.driver.execute_cdp_cmd("Storage.clearDataForOrigin", {"origin": "*", "storageTypes": "all"})
            self.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
            self.driver.set_window_size(*WINDOW)
        except Exception:  # anything it cannot undo: a new one
            self.quit()
            return self._start()
        return self.driver

    def blank(self) -> None:
        """Leave the test's pages (a live page reads itself every few seconds), closing extra windows."""
        if self.driver is None:
            return
        try:
            try:
                self.driver.switch_to.alert.dismiss()
            except Exception:
                pass
            handles = self.driver.window_handles
            for extra in handles[1:]:
                self.driver.switch_to.window(extra)
                self.driver.close()
            self.driver.switch_to.window(handles[0])
            self.driver.get("about:blank")
        except Exception:  # a driver in a state it cannot leave: the next test gets a new one
            self.quit()

    def quit(self) -> None:
        if self.driver is not None:
            try:
                self.driver.quit()
            except Exception:
                pass
            self.driver = None

    def close(self) -> None:
        self.quit()
        for profile in self.profiles:
            shutil.rmtree(profile, ignore_errors=True)
