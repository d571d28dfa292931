"""A decision a scenario gives that no run asked for fails the scenario: with a policy that does not
hold the call (a typo in its condition) or an approval's title misspelt, the decision would be
left unused and the scenario would prove nothing. Run with `manage.py behave` on a purpose-made
company (features.tests.support).
"""
from __future__ import annotations

import pytest

from features.tests.support import make_root, run_behave

FEATURES = {
    "decisions.feature": """
        Feature: decisions the runs ask for, and one they never do

          Scenario: a decision nobody asks for
            When triage runs with
              | title | paper jam |
            And "Some approval nobody ever asks for" is approved by olivia
            Then the run succeeds

          Scenario: both approvals decided
            When two-approvals runs
            And "Legal review" is approved by lawyer
            And "Final check" is approved by boss
            Then the run succeeds

          Scenario: one decision more than the run asks for
            When two-approvals runs
            And "Legal review" is approved by lawyer
            And "Final check" is approved by boss
            And "Legal review" is rejected by lawyer
            Then the run succeeds
    """,
}


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    base = tmp_path_factory.mktemp("unused-decisions")
    root = make_root(base, FEATURES)
    return root, run_behave(root, base / "var")


def test_a_decision_no_run_asked_for_fails_the_scenario_naming_what_was_asked(ran):
    root, behave = ran
    assert behave.returncode != 0, behave.output
    failing = behave.section("a decision nobody asks for", "both approvals decided")
    assert f"{root}/scenarios/decisions.feature:6" in failing, behave.output
    assert ('the decision "Some approval nobody ever asks for" approved by olivia was never used: no run of this '
            'scenario asked for "Some approval nobody ever asks for". No run asked for any approval') in failing, \
        behave.output
    extra = behave.section("one decision more than the run asks for")
    assert f"{root}/scenarios/decisions.feature:19" in extra, behave.output
    assert 'the decision "Legal review" rejected by lawyer was never used' in extra, behave.output
    assert ('The approvals asked for: "Legal review" (approval-1, approver lawyer, approved); "Final check" '
            "(approval-2, approver boss, approved)") in extra, behave.output
    failures = behave.section("Failing scenarios:")
    assert "both approvals decided" not in failures and "a decision nobody asks for" in failures, failures
    assert "1 scenario passed, 2 failed" in behave.output, behave.output
