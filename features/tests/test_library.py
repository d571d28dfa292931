"""The scenario library on its own, without behave or a database: reading feature files, the
scenario object, made-up input, step sets, choosing decisions and checking a run's records."""
from __future__ import annotations

import os
import re
import time
from typing import Any

import pytest

from features.library import ScenarioConfigError, StepLibrary, StepSet, check, load_scenarios
from features.library import model as m
from features.library.drive import choose_decision
from features.library.expressions import values
from features.tests.support import make_root
from runs.config.resolution import load_config

GOOD = """
    Feature: tickets
      Scenario: open one
        Given a ticket printer is open
        And desk.ticket.open fails once
        When triage runs with
          | title | paper |
        And "Final check" is approved by boss with note "ok"
        Then ticket paper was opened
        And desk.ticket.close was not called
        And the run succeeds

      Scenario: made up
        When triage runs
        Then the run fails with "policy_denied"
"""


@pytest.fixture
def desk(tmp_path):
    def build(features=None, **phrases):
        root = make_root(tmp_path, features if features is not None else {"tickets.feature": GOOD}, **phrases)
        return root, load_config(root, fakes="instance")

    return build


def test_scenarios_are_read_with_their_parts(desk):
    root, config = desk()
    result = load_scenarios(config)
    assert result.problems == []
    first, second = result.scenarios
    assert first.name == "open one" and first.file == "scenarios/tickets.feature" and first.workflow == "triage"
    assert first.input == {"title": "paper"}
    plain = first.plain()
    assert plain["given"] == [{"op": "desk.ticket.open", "input": {"title": "printer"}},
                              {"op": "desk.ticket.open", "fault": "fail_next"}]
    assert plain["decisions"] == [{"approval": "Final check", "decision": "approve", "by": "boss", "note": "ok"}]
    assert plain["expect"] == [{"op": "desk.ticket.open", "called": True, "input": {"title": "paper"}},
                               {"op": "desk.ticket.close", "called": False},
                               {"outcome": "finished"}]
    assert [s["kind"] for s in plain["steps"]] == ["given", "given", "when", "when", "then", "then", "then"]
    assert plain["steps"][0] == {"text": "a ticket printer is open", "kind": "given", "op": "desk.ticket.open"}
    assert first.text.splitlines()[0].strip() == "Scenario: open one"
    assert "Scenario: made up" not in first.text
    assert second.expect == [m.ExpectOutcome("failed", "policy_denied")]


def test_made_up_input_is_the_same_for_one_name_and_fits_the_schema(desk):
    root, config = desk()
    made = _named(load_scenarios(config), "made up").input
    assert set(made) == {"title"} and isinstance(made["title"], str) and made["title"]
    (root / "scenarios" / "tickets.feature").write_text((root / "scenarios" / "tickets.feature").read_text())
    again = _named(load_scenarios(config, [root / "scenarios" / "tickets.feature"]), "made up").input
    assert again == made
    renamed = GOOD.replace("Scenario: made up", "Scenario: made up too")
    (root / "scenarios" / "tickets.feature").write_text(renamed)
    other = _named(load_scenarios(config), "made up too").input
    assert other != made


def test_reads_again_only_when_a_file_changes(desk):
    root, config = desk()
    first = load_scenarios(config)
    assert load_scenarios(config) is first
    path = root / "scenarios" / "tickets.feature"
    path.write_text(GOOD.replace("open one", "open two"))
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10_000_000))
    second = load_scenarios(config)
    assert second is not first and second.named("open two") is not None
    (root / "scenarios" / "more.feature").write_text("Feature: more\n  Scenario: x\n    When triage runs\n")
    assert len(load_scenarios(config).scenarios) == 3


def test_problems_name_file_and_line_and_good_scenarios_still_load(desk):
    root, config = desk({
        "a.feature": "Feature: a\n  Scenario: fine\n    When triage runs\n  Scenario: bad\n    When triage runs\n"
                     "    Then nothing happens\n",
        "b.feature": "Feature: b\n  Scenario: fine\n    When triage runs\n",
        "apps_like/c.feature": "Feature: c\n",
    })
    result = load_scenarios(config)
    assert [s.name for s in result.scenarios] == ["fine"]
    messages = [str(p) for p in result.problems]
    unmatched = r".*scenarios/a\.feature:6: no step matches \"Then nothing happens\""
    assert any(re.match(unmatched, x) for x in messages), messages
    second = 'scenarios/b.feature:2: a second scenario named "fine" (the first is at'
    assert any(second in x for x in messages), messages
    assert any("scenarios/apps_like/c.feature:1: has no scenarios" in x for x in messages), messages
    assert all(e["file"] and e["line"] for e in result.errors)


def test_a_phrase_naming_no_field_makes_every_scenario_unreadable(desk):
    # Caught when the config resolves, so every command (and every scenario) refuses it alike.
    from connectors.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        desk(expect="ticket {subject} was opened")
    assert "desk.ticket.open's expect phrase 'ticket {subject} was opened' names {subject}" in str(caught.value)
    assert caught.value.code == "config_invalid"


def test_phrase_values_follow_the_field_types(desk):
    root, config = desk({"v.feature": """
        Feature: v
          Scenario: phrase words
            When triage runs with
              | title    | 007 |
              | priority | 3   |
            Then ticket "007" was opened
            And ticket 007 was opened
    """})
    scenario = load_scenarios(config).scenarios[0]
    assert scenario.input == {"title": "007", "priority": 3}
    assert scenario.expect == [m.ExpectCall("desk.ticket.open", {"title": "007"}, True)] * 2


def test_step_sets_as_tuples_and_their_parameters(desk):
    root, config = desk()
    seen = []
    config.steps.append([("then", "{vendor} holds {int} ticket(s)", lambda world, vendor, n: seen.append((vendor, n)))])
    library = StepLibrary(config)
    rule, arguments = library.match(_step("then", "desk holds 2 tickets"))
    assert rule.group == "step set config" and values(arguments) == ["desk", 2]


def test_a_broken_step_set_fails_the_load(desk):
    root, config = desk()
    config.steps.append(StepSet("bad"))
    config.steps[-1].add("given", "{nope} happens", lambda world, x: None)
    with pytest.raises(ScenarioConfigError) as caught:
        StepLibrary(config)
    message = str(caught.value)
    assert "- step set bad: This Cucumber Expression has a problem at column 1:" in message, message
    assert "Undefined parameter type 'nope'." in message and "The parameter types are " in message, message


# -- decisions ----------------------------------------------------------------

def _decision(approval, by="boss"):
    return m.Decision(approval=approval, decision="approve", by=by)


def test_a_decision_by_title_or_id_goes_to_its_own_approval():
    final, legal = _decision("Final check"), _decision("Legal review", "lawyer")
    approval = {"id": "approval-1", "title": "Legal review"}
    asked = {"Legal review", "approval-1"}
    assert choose_decision(approval, [final, legal], asked, ("Legal review", "Final check")) is legal
    by_id = _decision("approval-1")
    assert choose_decision(approval, [final, by_id], {"Legal review", "approval-1"}, ()) is by_id


def test_an_unnamed_approval_takes_the_next_decision_meant_for_no_other():
    approval = {"id": "approval-2", "title": "Onboard kim"}
    final, later, loose = _decision("Final check"), _decision("approval-3"), _decision("whatever")
    asked = {"Onboard kim", "approval-2", "Legal review", "approval-1"}
    assert choose_decision(approval, [final, later, loose], asked, ("Final check",)) is loose
    assert choose_decision(approval, [final, later], asked, ("Final check",)) is None
    assert choose_decision(approval, [_decision("Legal review")], asked, ()) is None


# -- checking records --------------------------------------------------------

def _scenario(*actions):
    steps = [m.ScenarioStep(text=f"step {i}", kind="then", keyword="Then", line=i, action=a)
             for i, a in enumerate(actions)]
    return m.Scenario(name="s", file="f", location="f", line=1, workflow="w", text="", steps=steps, input={})


def test_a_call_counts_only_without_an_error():
    records: list[dict[str, Any]] = [
        {"type": "run.started"},
        {"type": "op.called", "op": "desk.ticket.close", "input": {"ticket_id": "t1"}, "decision": {"kind": "deny"},
         "error": {"code": "policy_denied", "message": "denied"}},
        {"type": "run.failed", "error": {"code": "policy_denied", "message": "denied"}},
    ]
    scenario = _scenario(m.ExpectCall("desk.ticket.close", None, False), m.ExpectCall("desk.ticket.close", None, True),
                         m.ExpectOutcome("failed", "policy_denied"), m.ExpectOutcome("failed", "driver_failed"))
    results = check(scenario, records)
    assert [r.ok for r in results] == [True, False, True, False]
    assert "Attempts at desk.ticket.close that failed:" in results[1].detail
    assert "policy_denied: denied" in results[1].detail
    assert results[3].detail.startswith("the run failed with policy_denied, not driver_failed")


def test_an_outcome_before_the_end_is_run_not_ended():
    result = check(_scenario(m.ExpectOutcome("finished")), [{"type": "run.started"}])[0]
    assert not result.ok and "run not ended" in result.detail


def _named(result, name):
    scenario = result.named(name)
    assert scenario is not None, [s.name for s in result.scenarios]
    return scenario


def _step(kind, text):
    from features.library.library import StepText

    return StepText(name=text, step_type=kind)
