"""The workflow's catalog page in a real browser (headless Chromium through Selenium): a helper's
calls drawn under the line that calls it, at every place that calls it, and the early ends of
the paths (return, break, continue) shown where they are.

Skipped with the reason when Chromium, ChromeDriver or selenium is missing.
"""
from __future__ import annotations

from typing import Any

from runs.tests import browser_support as support
from runs.tests import test_outline_runs as outline_runs
from runs.tests.browser_support import BROWSER_TESTS, EC, By, WebDriverWait, full_page, log_in, staff_user

browser = support.browser
shots = support.shots
paths = outline_runs.paths  # the workflow with helpers, early returns, break and continue


pytestmark = BROWSER_TESTS


def test_the_catalog_page_draws_a_helpers_calls_inside_the_line_that_calls_it(
        live_server: Any, engine_for: Any, paths: Any, browser: Any, shots: Any) -> None:
    engine_for(paths)
    staff_user("carol")
    wait = WebDriverWait(browser, 20)
    log_in(browser, live_server.url, "carol", then="/admin/")
    # As a person gets there: the home page's catalog, its list of workflows, then the workflow.
    wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, "a[href$='/admin/catalog/workflows/']"))).click()
    wait.until(EC.element_to_be_clickable((By.LINK_TEXT, "paths"))).click()
    outline = wait.until(EC.presence_of_element_located((By.ID, "outline")))
    items = outline.find_elements(By.TAG_NAME, "li")
    lines = [(int(float((li.get_attribute("style") or "0").split(":")[1].strip().rstrip(";").rstrip("em"))),
              (li.get_attribute("class") or "").removeprefix("sanoma-outline-"), " ".join(li.text.split()))
             for li in items]
    assert lines == [
        (0, "branch", "34 branch branch"),
        (1, "section", "if input.stop"),
        (2, "helper", '35 helper tell(ctx, "ops", "stopped"), defined at line 16'),
        (3, "op", "17 op acme.mail.send"),
        (2, "end", "↩ returns"),
        (1, "section", "the way past"),
        (0, "each", "38 each for order_id in input.orders"),
        (1, "branch", "39 branch branch"),
        (2, "section", "if not order_id"),
        (3, "end", "↩ goes on with the loop's next turn"),
        (2, "section", "the way past"),
        (1, "branch", "41 branch branch"),
        (2, "section", 'if order_id == "end"'),
        (3, "end", "↩ breaks out of the loop"),
        (2, "section", "the way past"),
        (1, "helper", "43 helper look_up(ctx, order_id), defined at line 20"),
        (2, "op", "21 op acme.order.get"),
        (2, "branch", "22 branch branch"),
        (3, "section", "if order.total > 1000"),
        (4, "helper", '23 helper tell(c, "finance", f"big order {order_id}"), defined at line 16'),
        (5, "op", "17 op acme.mail.send"),
        (4, "end", "↩ returns"),
        (3, "section", "the way past"),
        (2, "op", "25 op acme.post.publish"),
        (1, "branch", "44 branch branch"),
        (2, "section", "if order.total > 1000 and input.first_big"),
        (3, "end", "↩ returns"),
        (2, "section", "the way past"),
        (1, "helper", "47 helper pause(ctx, 30), defined at line 29"),
        (2, "sleep", "30 sleep sleep"),
        (0, "all", "50 all all"),
        (1, "helper", '50 helper tell(ctx, "a", "done"), defined at line 16'),
        (2, "op", "17 op acme.mail.send"),
        (1, "helper", '50 helper tell(ctx, "b", "done"), defined at line 16'),
        (2, "op", "17 op acme.mail.send"),
    ]
    # The source beside it holds the helpers the outline points into.
    source = browser.find_element(By.CSS_SELECTOR, "#source pre").text
    assert "def run(ctx, input):" in source and "def look_up(c, order_id):" in source and "def pause(ctx" in source
    full_page(browser, shots / "catalog-helpers.png")
