"""`manage.py behave` on the example company and the runtime's own features: everything passes."""
from __future__ import annotations

import re

from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector

from features.tests.support import run_behave


def test_manage_py_behave_passes_on_the_example_company(tmp_path, monkeypatch):
    # The host's metrics folder, as a site and its workers share it: the scenarios' runs are not the
    # company's work and must not reach its counters.
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(metrics))
    result = run_behave(None, tmp_path / "var")
    assert result.returncode == 0, result.output
    assert re.search(r"\b0 failed, 0 skipped", result.output), result.output
    for title in ("The scenario's clock", "The generic steps", "Refund an order", "Follow up on an order",
                  "Publish new prices", "Onboard a support agent"):
        assert f"Feature: {title}" in result.output, title
    found = re.search(r"(\d+) scenarios passed", result.output)
    assert found, result.output
    passed = int(found.group(1))
    assert passed >= 35, result.output
    families = MultiProcessCollector(CollectorRegistry(), str(metrics)).collect()
    counted = {sample.name: sample.value for family in families
               for sample in family.samples if sample.name.startswith("sanoma_") and sample.value}
    assert counted == {}, counted
