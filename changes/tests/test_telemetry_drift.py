"""`sanoma_drift_found_total`: a drift run counts each resource it found drifted or gone, by type."""
from __future__ import annotations

from collections import Counter

from prometheus_client import REGISTRY

from changes.lifecycle.workflow import NAME
from changes.tests.test_drift_apply import acme, drift  # noqa: F401 (the fixture)
from runs.telemetry import metrics


def found() -> Counter[str]:
    """This process's counts, by resource type."""
    return Counter({sample.labels["resource_type"]: sample.value for family in REGISTRY.collect()
                    if family.name == "sanoma_drift_found" for sample in family.samples
                    if sample.name == "sanoma_drift_found_total"})


def test_a_drift_run_counts_what_it_found_by_resource_type(acme):  # noqa: F811
    before = found()
    report = drift(acme)
    expected = Counter(e["type"] for e in report["resources"] if e["status"] in ("drifted", "gone"))
    assert expected  # the example company's fake lacks some declared resources at first
    grown = found()
    grown.subtract(before)
    assert +grown == expected


def test_the_change_workflow_is_the_one_whose_ends_count_as_changes():
    assert metrics.CHANGE_WORKFLOW == NAME
