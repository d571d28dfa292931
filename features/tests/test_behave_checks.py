"""The scenario runner's checks, and the errors a writer gets, by running `manage.py behave` on purpose-made
feature files in a temporary config root and reading its exit code and output.

One behave run serves most tests (the module fixture); the broken-config check needs its own.
"""
from __future__ import annotations

import re

import pytest

from features.tests.support import make_root, run_behave

FEATURES = {
    # check 99: a feature file with no scenarios
    "no_scenarios.feature": """
        Feature: nothing to run
          Just words.
    """,
    # check 99: two When steps
    "two_whens.feature": """
        Feature: two whens
          Scenario: runs twice
            When triage runs
            And triage runs
            Then the run succeeds
    """,
    # check 99: an unknown op
    "unknown_op.feature": """
        Feature: unknown op
          Scenario: names an operation nobody declares
            Given desk.ticket.burn fails once
            When triage runs
    """,
    # check 99: a doc string that is not JSON
    "not_json.feature": """
        Feature: not json
          Scenario: a doc string that is not JSON
            When triage runs with
              \"\"\"
              {"title": "broken",
              \"\"\"
    """,
    # check 99: a three-column table
    "three_columns.feature": """
        Feature: three columns
          Scenario: a table with three columns
            When triage runs with
              | title | printer | jammed |
    """,
    # a scenario with no When
    "no_when.feature": """
        Feature: no when
          Scenario: says nothing about a run
            Then the run succeeds
    """,
    # check 101: "123" for a string field, 5 for a number field; "yes" for a boolean is an error
    "values.feature": """
        Feature: values
          Scenario: a cell for a text field is text, for a number field a number
            When triage runs with
              | title    | 123 |
              | priority | 5   |
            Then desk.ticket.open was called with
              \"\"\"
              {"title": "123", "priority": 5}
              \"\"\"
            And ticket 123 was opened
            And the run succeeds

          Scenario: yes is not a boolean
            When triage runs with
              | title  | printer |
              | urgent | yes     |

          Scenario: a field the input does not have
            When triage runs with
              | title | printer |
              | owner | kim     |
    """,
    # check 102: outline rows that share a name
    "outline.feature": """
        Feature: outline
          Scenario Outline: open a ticket
            When triage runs with
              | title | <title> |
            Then ticket <title> was opened

            Examples:
              | title  |
              | paper  |
              | toner  |

          Scenario Outline: open <title>
            When triage runs with
              | title | <title> |
            Then 1 ticket is open

            Examples:
              | title |
              | ink   |
    """,
    # check 103: a call the policy denied counts as not called
    "denied.feature": """
        Feature: denied
          Scenario: closing is denied by policy
            When tidy runs
            Then desk.ticket.close was not called
            And desk.ticket.open was called
            And the run fails with "policy_denied"
    """,
    # check 104: decisions by title are never spent on another approval
    "decisions.feature": """
        Feature: decisions
          Scenario: each approval gets its own decision
            Given "Final check" is approved by boss
            And "Legal review" is approved by lawyer
            When two-approvals runs
            Then the run succeeds
            And the run's output contains
              | legal | lawyer |
              | final | boss   |

          Scenario: a missing decision
            Given "Final check" is approved by boss
            When two-approvals runs
            Then the run succeeds
    """,
    # a wrong expectation: names file, line and what differed, with the calls made
    "wrong.feature": """
        Feature: wrong expectation
          Scenario: expects another title
            When triage runs with
              | title | printer |
            Then desk.ticket.open was called with
              | title | scanner |
    """,
    # an unmatched step lists the steps; an ambiguous one names both matches
    "steps.feature": """
        Feature: steps
          Scenario: a step nobody defined
            When triage runs
            Then the printer is on fire

          Scenario: a step two definitions match
            Given desk.ticket.open is rate limited once
            When triage runs
    """,
}


@pytest.fixture(scope="module")
def checks(tmp_path_factory):
    base = tmp_path_factory.mktemp("scenario-checks")
    root = make_root(base, FEATURES)
    result = run_behave(root, base / "var")
    result.root = root  # type: ignore[attr-defined]
    return result


def where(checks, file: str, line: int) -> str:
    return f"{checks.root}/scenarios/{file}:{line}"


def test_behave_fails_on_bad_files(checks):
    assert checks.returncode != 0, checks.output
    assert "Traceback" not in checks.output, checks.output


def test_no_scenarios(checks):
    assert f"{where(checks, 'no_scenarios.feature', 1)}: has no scenarios" in checks.output, checks.output


def test_two_whens(checks):
    assert f"{where(checks, 'two_whens.feature', 4)}: a second When that runs a workflow (the first is on line 3)" \
        in checks.output, checks.output


def test_unknown_op(checks):
    assert f'{where(checks, "unknown_op.feature", 3)}: no operation "desk.ticket.burn"; the config has ' \
        "desk.ticket.close, desk.ticket.open" in checks.output, checks.output


def test_doc_string_not_json(checks):
    assert f'{where(checks, "not_json.feature", 3)}: the doc string after "triage runs with" is not JSON' \
        in checks.output, checks.output


def test_three_column_table(checks):
    assert f"{where(checks, 'three_columns.feature', 4)}: the table after \"triage runs with\" needs exactly two " \
        "columns (name | value); this row has 3" in checks.output, checks.output


def test_scenario_without_when(checks):
    assert f'{where(checks, "no_when.feature", 2)}: scenario "says nothing about a run" has no When' \
        in checks.output, checks.output


def test_cells_follow_the_field_types(checks):
    passed = checks.section("Scenario: a cell for a text field is text", "\n\n")
    assert "passed" in passed and "failed" not in passed and "error" not in passed.lower(), checks.output
    assert f"{where(checks, 'values.feature', 16)}: 'yes' is not a value for urgent of the input of workflow " \
        "triage: it takes true or false" in checks.output, checks.output
    assert f"{where(checks, 'values.feature', 21)}: the input of workflow triage has no field 'owner'; its fields " \
        "are title, priority, urgent" in checks.output, checks.output


def test_outline_rows_sharing_a_name_get_their_line(checks):
    assert "Scenario Outline: open a ticket (line 9)" in checks.output, checks.output
    assert "Scenario Outline: open a ticket (line 10)" in checks.output, checks.output
    assert "Scenario Outline: open ink" in checks.output and "open ink (line" not in checks.output, checks.output


def test_a_denied_call_was_not_called(checks):
    section = checks.section("Scenario: closing is denied by policy", "\n\n")
    assert "failed" not in section and "error" not in section.lower(), section


def test_decisions_by_title_reach_their_own_approvals(checks):
    section = checks.section("Scenario: each approval gets its own decision", "\n\n")
    assert "failed" not in section and "error" not in section.lower(), section
    missing = checks.section("Scenario: a missing decision")
    assert f"{where(checks, 'decisions.feature', 13)}: " in missing, checks.output
    assert 'the run waits for "Legal review" (approval-1, approver lawyer) and no decision is left for it; ' \
        'the decisions left: "Final check" approved by boss' in missing, checks.output


def test_a_wrong_expectation_names_file_line_and_what_differed(checks):
    section = checks.section("Scenario: expects another title")
    assert f"{where(checks, 'wrong.feature', 5)}: Then desk.ticket.open was called with" in section, checks.output
    assert 'no call to desk.ticket.open with {"title": "scanner"} was made.' in section
    assert 'Calls to desk.ticket.open that were made:\n  {"priority": 1, "title": "printer", "urgent": false}' \
        in section, section


def test_an_unmatched_step_lists_the_steps_there_are(checks):
    section = checks.section(f"{where(checks, 'steps.feature', 4)}: no step matches")
    assert section.startswith(f'{where(checks, "steps.feature", 4)}: no step matches "Then the printer is on fire"')
    listing = section.split("The steps there are:", 1)[1]
    assert "Given {op} was called with" in listing
    assert "When {workflow} runs" in listing
    assert "Then the run fails with {string}" in listing
    # the generic steps come first, then the phrases by operation, then the step sets
    assert re.search(r"Operation phrases:\n\s+desk\.ticket\.open:\n\s+Given a ticket \{title\} is open\n"
                     r"\s+Then ticket \{title\} was opened", listing), listing
    assert "From step set desk:" in listing
    assert listing.index("Then the run succeeds") < listing.index("Operation phrases:") < listing.index("From step set")


def test_an_ambiguous_step_names_both(checks):
    assert f'{where(checks, "steps.feature", 7)}: "desk.ticket.open is rate limited once" is ambiguous: it matches ' \
        '"Given {op} is rate limited once" and "Given {word} is rate limited once" (step set desk)' \
        in checks.output, checks.output


def test_a_phrase_naming_no_field_fails_the_whole_load(tmp_path):
    root = make_root(tmp_path, {"fine.feature": """
        Feature: fine
          Scenario: would run
            When triage runs
            Then the run succeeds
    """}, given="a ticket {subject} is open")
    # manage.py's system checks resolve the config before behave starts, and refuse it; with the
    # checks skipped, behave's before_all refuses it. Either way no scenario runs.
    for args in ((), ("--skip-checks",)):
        result = run_behave(root, tmp_path / "var", *args)
        assert result.returncode != 0, result.output
        assert "desk.ticket.open's given phrase 'a ticket {subject} is open' names {subject}, which is not an " \
            "input field; its fields are title, priority, urgent" in result.output, result.output
        assert "would run" not in result.output, result.output
        assert not re.search(r"\b[1-9]\d* scenarios? passed", result.output), result.output
    assert "HOOK-ERROR in before_all" in result.output, result.output
