"""The alerting rules shipped in deploy/prometheus/: Prometheus' own promtool checks them and runs
their tests (each alert firing and not firing), and their limits are the desk's health page's."""
from __future__ import annotations

import inspect
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.utils.module_loading import import_string
from prometheus_client import CollectorRegistry, generate_latest

from runs.health import conditions
from wakeups import health as wakeup_health

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (apt-get install prometheus)")


def _rules() -> dict[str, dict]:
    loaded = yaml.safe_load((RULES / "alerts.yml").read_text())
    return {rule["alert"]: rule for group in loaded["groups"] for rule in group["rules"]}


@needs_promtool
def test_promtool_checks_the_rules():
    done = subprocess.run([str(PROMTOOL), "check", "rules", "alerts.yml"], cwd=RULES, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 7 rules found" in done.stdout


@needs_promtool
def test_promtool_runs_each_alerts_cases(tmp_path):
    done = subprocess.run([str(PROMTOOL), "test", "rules", "alerts_test.yml"], cwd=RULES, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr

    # The cases can fail: with the queue's limit doubled, the case that expects it to fire fails.
    for name in ("alerts.yml", "alerts_test.yml"):
        shutil.copy(RULES / name, tmp_path / name)
    rules = tmp_path / "alerts.yml"
    rules.write_text(rules.read_text().replace("sanoma_queue_oldest_runnable_seconds) > 300",
                                               "sanoma_queue_oldest_runnable_seconds) > 600"))
    broken = subprocess.run([str(PROMTOOL), "test", "rules", "alerts_test.yml"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert broken.returncode == 1 and "SanomaRunQueuedTooLong" in broken.stdout + broken.stderr


def test_every_alert_has_a_case_that_fires_and_one_that_does_not():
    cases = yaml.safe_load((RULES / "alerts_test.yml").read_text())["tests"]
    fired: set[str] = set()
    quiet: set[str] = set()
    for case in cases:
        for check in case["alert_rule_test"]:
            (fired if check["exp_alerts"] else quiet).add(check["alertname"])
    assert fired == quiet == set(_rules())


def test_the_rules_limits_are_the_health_pages():
    rules = _rules()
    assert f"> {int(conditions.QUEUE_LIMIT.total_seconds())}" in rules["SanomaRunQueuedTooLong"]["expr"]
    failing = rules["SanomaVendorFailureRate"]["expr"]
    assert f") > {conditions.FAILURE_RATE}" in failing
    assert f">= {conditions.FAILURE_MIN_CALLS}" in failing
    window = int(conditions.FAILURE_WINDOW.total_seconds() // 60)
    assert set(re.findall(r"\[(\w+)\]", failing)) == {f"{window}m"}
    hours = int(conditions.VERIFY_STALE.total_seconds() // 3600)
    assert f"> {hours} * 3600" in rules["SanomaLedgerVerifyStale"]["expr"]
    # Each condition on the page names its alert, and each alert is one of the page's.
    sources = inspect.getsource(conditions) + inspect.getsource(wakeup_health)
    assert set(re.findall(r'"(Sanoma\w+)"', sources)) == set(rules)


@needs_promtool
@pytest.mark.django_db
def test_promtool_finds_the_health_gauges_well_formed():
    registry = CollectorRegistry()
    for dotted in settings.SANOMA_METRICS_COLLECTORS:
        registry.register(import_string(dotted)())
    text = generate_latest(registry)
    assert b"sanoma_wakeup_registered 1.0" in text
    done = subprocess.run([str(PROMTOOL), "check", "metrics"], input=text, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
