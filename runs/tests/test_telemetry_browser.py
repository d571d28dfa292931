"""In a real browser: a superuser reads /metrics signed in, and a run's page links to its trace
when a trace URL template is set (headless Chromium through Selenium, as the other browser tests)."""
from __future__ import annotations

from django.test import override_settings

from runs.telemetry import tracing
from runs.tests import browser_support as support
from runs.tests.browser_support import BROWSER_TESTS, By, log_in, staff_user
from runs.tests.test_telemetry_metrics import PUBLISHING

pytestmark = BROWSER_TESTS
browser = support.browser
shots = support.shots


def test_a_superuser_reads_the_metrics_and_follows_a_run_to_its_trace(live_server, engine_for, browser, shots):
    engine = engine_for(PUBLISHING)
    run = engine.run("publishing")
    root = staff_user("root")
    root.is_superuser = True
    root.save()
    with override_settings(SANOMA_TRACE_URL_TEMPLATE=live_server.url + "/traces/{trace_id}"):
        log_in(browser, live_server.url, "root", then=f"/admin/runs/run/{run.id}/change/")
        link = support.WebDriverWait(browser, 20).until(
            support.EC.presence_of_element_located((By.ID, "trace-link")))
        browser.save_screenshot(str(shots / "run-page-trace-link.png"))
        assert link.text.lower() == "trace"  # the object tools are drawn in capitals
        assert link.get_attribute("href") == f"{live_server.url}/traces/{tracing.run_trace_id(run.id)}"

    browser.get(live_server.url + "/metrics")
    text = browser.find_element(By.TAG_NAME, "body").text
    assert "# TYPE sanoma_queue_runnable gauge" in text
    assert 'sanoma_steps_total{kind="call",workflow="publishing"}' in text
