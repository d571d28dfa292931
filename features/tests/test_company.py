"""`manage.py behave` on the example company and the runtime's own features: everything passes."""
from __future__ import annotations

import re

from features.tests.support import run_behave


def test_manage_py_behave_passes_on_the_example_company(tmp_path):
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
