"""A step's values are added up in the process and written in one go: a scrape sees the same
counts and histograms as if each had been written at once, once the run's advance has ended, or
a second later while a long segment goes on."""
from __future__ import annotations

import pytest
from prometheus_client import REGISTRY, CollectorRegistry, Histogram

from runs.models import RunStatus
from runs.telemetry import metrics
from runs.tests.test_telemetry_metrics import PUBLISHING


def unflushed(name: str, **labels: str) -> float:
    """The value as written so far, without writing what this process has added up."""
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_observations_added_up_give_the_same_buckets_sum_and_count_as_observed_one_by_one():
    op = type("Op", (), {"vendor": "acme", "id": "acme.timed.once", "effect": "read"})()
    registry = CollectorRegistry()
    direct = Histogram("direct", "h", ["op"], buckets=metrics.CALL_BUCKETS, registry=registry)
    values = [0.0, 0.005, 0.0051, 0.01, 0.3, 0.3, 59.9, 60.0, 61.0, 1000.0]
    metrics.flush()
    for value in values:
        metrics.call_attempted(op, value)
        direct.labels("x").observe(value)
    labels = {"connector": "acme", "operation": "acme.timed.once", "effect": "read"}
    assert unflushed("sanoma_call_duration_seconds_count", **labels) == 0  # nothing written yet
    metrics.flush()
    written = {(s.name.removeprefix("sanoma_call_duration_seconds"), s.labels.get("le")): s.value
               for family in REGISTRY.collect() if family.name == "sanoma_call_duration_seconds"
               for s in family.samples if s.labels.get("operation") == "acme.timed.once"
               and not s.name.endswith("_created")}
    expected = {(s.name.removeprefix("direct"), s.labels.get("le")): s.value
                for family in registry.collect() for s in family.samples if not s.name.endswith("_created")}
    assert written == expected and written[("_count", None)] == len(values)


def test_a_runs_steps_are_written_when_its_advance_ends(engine_for):
    engine = engine_for(PUBLISHING)
    labels = {"connector": "acme", "operation": "acme.post.publish", "effect": "publish", "outcome": "ok"}
    metrics.flush()
    before = unflushed("sanoma_calls_total", **labels), unflushed("sanoma_steps_total", workflow="publishing",
                                                                  kind="call")
    assert engine.run("publishing").status == RunStatus.FINISHED
    after = unflushed("sanoma_calls_total", **labels), unflushed("sanoma_steps_total", workflow="publishing",
                                                                 kind="call")
    assert (after[0] - before[0], after[1] - before[1]) == (1, 1)


def test_values_waiting_longer_than_a_second_are_written_within_a_few_steps(monkeypatch):
    op = type("Op", (), {"vendor": "acme", "id": "acme.thing.do", "effect": "write"})()
    labels = {"connector": "acme", "operation": "acme.thing.do", "effect": "write", "outcome": "ok"}
    metrics.flush()
    before = unflushed("sanoma_calls_total", **labels)
    metrics.call_settled(op, "ok")
    assert unflushed("sanoma_calls_total", **labels) == before  # added up, not written yet
    monkeypatch.setattr(metrics, "FLUSH_SECONDS", 0.0)
    for _ in range(metrics.CHECK_EVERY - 1):  # the clock is read every CHECK_EVERY fires
        metrics.call_settled(op, "ok")
    assert unflushed("sanoma_calls_total", **labels) == before + metrics.CHECK_EVERY


@pytest.mark.parametrize("on", [True, False])
def test_the_setting_is_read_again_when_it_changes(settings, on):
    settings.SANOMA_METRICS = on  # pytest-django's settings fixture sends setting_changed
    assert metrics.enabled() is on
