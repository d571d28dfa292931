"""Scenario traps a new writer fell into, each met by running `manage.py behave` on a purpose-made
company (features.tests.support):

- a `Given ... state at "<path>"` whose path the fake does not have (a typo) is an error naming the
  paths it has, instead of setting a place nothing reads; a new record beside others still goes in;
- `Then <op> was called` covers the calls of the child runs the scenario drove;
- `-i` (behave's `--include`) matches a feature file's path from the config root, as scenarios
  name their files.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from features.tests.support import PROJECT, make_root, run_behave, subprocess_env

PARENT = '''
from runs.authoring import define_workflow


def run(ctx, input):
    child = ctx.start_run("triage", {"title": "from the child"})
    return ctx.wait_run(child)


parent = define_workflow(name="parent", uses=["start_run", "wait_run"], run=run)
'''

FEATURES = {
    "state.feature": """
        Feature: a vendor's state set by hand

          Scenario: a typo in the path
            Given the desk's state at "ticket.0" is
              \"\"\"
              {"ticket_id": "t9", "title": "set by hand"}
              \"\"\"
            When triage runs with
              | title | paper jam |
            Then the run succeeds

          Scenario: a new item beside the others goes in
            Given the desk's state at "tickets.0" is
              \"\"\"
              {"ticket_id": "t9", "title": "set by hand"}
              \"\"\"
            When triage runs with
              | title | paper jam |
            Then the desk's state at "tickets" has 2 items
            And the desk's state at "tickets.0.title" is "set by hand"

          Scenario: a typo in a field of a record
            Given the desk's state at "tickets.0" is
              \"\"\"
              {"ticket_id": "t9", "title": "set by hand"}
              \"\"\"
            And the desk's state at "tickets.0.titel" is "retitled"
            When triage runs with
              | title | paper jam |
            Then the run succeeds
    """,
    "child.feature": """
        Feature: calls made by a child run

          Scenario: the child's call counts
            When parent runs
            Then the run succeeds
            And desk.ticket.open was called with
              | title | from the child |

          Scenario: a call nobody made names the child's calls
            When parent runs
            Then desk.ticket.open was called with
              | title | from the parent |
    """,
}


@pytest.fixture(scope="module")
def company(tmp_path_factory):
    base = tmp_path_factory.mktemp("scenario-traps")
    root = make_root(base, FEATURES)
    (root / "workflows" / "parent.py").write_text(PARENT)
    return root, base


@pytest.fixture(scope="module")
def ran(company):
    root, base = company
    return run_behave(root, base / "var")


def test_a_state_path_the_fake_does_not_have_names_the_paths_it_has(ran, company):
    root, _ = company
    assert f"{root}/scenarios/state.feature:4" in ran.output, ran.output
    assert ("desk's state has no 'ticket.0': there is no ticket; the paths at the top are tickets"
            in ran.output), ran.output
    # A field no record has is a typo too, named with the fields the record has.
    assert ("desk's state has no 'tickets.0.titel': there is no tickets.0.titel; the paths there are "
            "tickets.0.ticket_id, tickets.0.title") in ran.output
    failures = ran.section("Failing scenarios:")
    assert "a typo in the path" in failures and "a typo in a field of a record" in failures
    assert "a new item beside the others goes in" not in failures, failures


def test_was_called_covers_the_child_runs_the_scenario_drove(ran, company):
    root, _ = company
    failing = ran.section("a call nobody made names the child's calls")
    assert "no call to desk.ticket.open with" in failing and '"from the parent"' in failing
    assert '"title": "from the child", "urgent": false} (by the child run parent-' in failing, failing
    assert "The run's calls and those of the runs it started" in failing
    # The passing one: its scenario is not among the failures.
    assert "the child's call counts" not in ran.section("Failing scenarios:"), ran.section("Failing scenarios:")
    assert "2 scenarios passed, 3 failed" in ran.output, ran.output  # the two typos, and this one


def test_include_matches_paths_from_the_config_root(company):
    root, base = company
    env = subprocess_env(base / "var-include", SANOMA_FAKES="instance", SANOMA_ROOT=str(root))
    done = subprocess.run(
        [sys.executable, str(PROJECT / "manage.py"), "behave", "--noinput", "--simple", "--format", "plain",
         "--no-capture", "-i", "^scenarios/child", "-n", "the child's call counts"],
        cwd=PROJECT, env=env, capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "1 feature passed, 0 failed" in output and "1 scenario passed, 0 failed" in output, output


def _behave(company, folder: str, *args: str) -> tuple[int, str]:
    root, base = company
    env = subprocess_env(base / folder, SANOMA_FAKES="instance", SANOMA_ROOT=str(root))
    done = subprocess.run(
        [sys.executable, str(PROJECT / "manage.py"), "behave", "--noinput", "--simple", "--format", "plain",
         "--no-capture", *args], cwd=PROJECT, env=env, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout + done.stderr


def test_an_include_matching_nothing_fails_naming_the_feature_files(company):
    """A typo in CI's `-i` would otherwise run nothing and pass."""
    root, _ = company
    code, output = _behave(company, "var-nothing", "-i", "credits_nope")
    assert code != 0, output
    assert (f"no feature file matches what was asked (--include 'credits_nope'), so no scenario would run: the "
            f"feature files of {root} are scenarios/child.feature, scenarios/state.feature") in output, output


def test_a_feature_file_given_by_path_runs_and_a_missing_one_is_named(company):
    root, _ = company
    code, output = _behave(company, "var-path", str(root / "scenarios" / "child.feature"),
                           "-n", "the child's call counts")
    assert code == 0, output
    assert "1 feature passed, 0 failed" in output and "1 scenario passed, 0 failed" in output, output
    code, output = _behave(company, "var-missing", str(root / "scenarios" / "chidl.feature"))
    assert code != 0, output
    assert (f"{root}/scenarios/chidl.feature: there is no such file; the feature files of {root} are "
            "scenarios/child.feature, scenarios/state.feature") in output, output
