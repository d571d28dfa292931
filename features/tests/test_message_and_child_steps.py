"""Scenarios with messages and child runs, on the example company: a message is sent once the run
waits on its topic; a message that is not sent lets the wait's deadline pass on the scenario's
clock; the approvals of child runs are decided from the scenario's decisions."""
from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest
from django.conf import settings

from features.library import load_scenarios
from features.library import model as m
from features.library.errors import DriveError, StepFailed
from features.library.world import ScenarioWorld
from runs.config.registry import set_config
from runs.config.resolution import load_config
from runs.models import Run

FEATURE = '''
Feature: talk
  Background:
    Given alice is in group "staff"
    And sam is in group "security"
    And the run is started by alice

  Scenario: shipped
    When await-shipment runs with
      | order_id | 1001 |
    And the run receives a message on "shipped" with
      | tracking | T1 |
    Then the run succeeds

  Scenario: a message on another topic is not read
    When await-shipment runs with
      | order_id     | 1001 |
      | within_hours | 1    |
    And the run receives a message on "delivered"
    Then the run succeeds

  Scenario: a team of one
    When support.onboard-team runs with
      | usernames | ["lee"] |
    And "Onboard lee as a support agent" is approved by support-lead
    Then the run succeeds

  Scenario: a team whose child waits for an approval no one gives
    When support.onboard-team runs with
      | usernames | ["lee"] |
    Then the run succeeds
'''


@pytest.fixture
def company():
    config = load_config(Path(settings.BASE_DIR) / "company", fakes="instance")
    set_config(config)
    yield config
    set_config(None)


def play(config, scenario) -> tuple[ScenarioWorld, list[str]]:
    world = ScenarioWorld(config, scenario)
    world.prepare()
    failures = []
    for index in range(len(scenario.steps)):
        try:
            world.execute(index)
        except (StepFailed, DriveError) as failed:
            failures.append(str(failed))
    return world, failures


@pytest.fixture
def loaded(company, tmp_path):
    path = tmp_path / "talk.feature"
    path.write_text(dedent(FEATURE))
    found = load_scenarios(company, files=[path])
    assert found.problems == []
    return {s.name: s for s in found.scenarios}


@pytest.mark.django_db
def test_a_message_step_is_sent_when_the_run_waits_on_its_topic(company, loaded):
    scenario = loaded["shipped"]
    assert scenario.actions(m.Message) == [m.Message("shipped", {"tracking": "T1"}, 11)]
    world, failures = play(company, scenario)
    assert failures == [] and world.run is not None and world.run.result == {"shipped": True, "tracking": "T1"}


@pytest.mark.django_db
def test_a_message_on_another_topic_lets_the_deadline_pass(company, loaded):
    world, failures = play(company, loaded["a message on another topic is not read"])
    assert failures == [] and world.run is not None and world.run.result == {"shipped": False}


@pytest.mark.django_db
def test_the_approvals_of_child_runs_are_decided_from_the_scenario(company, loaded):
    world, failures = play(company, loaded["a team of one"])
    assert world.run is not None
    # The child also asks security for the grant, and the scenario gave no decision for it.
    assert len(failures) == 2 and 'waits for "shop.staff.grant needs group security"' in failures[0]
    assert "the run has not ended" in failures[1]
    assert Run.objects.filter(parent_id=world.run.id).count() == 1


@pytest.mark.django_db
def test_a_childs_undecided_approval_names_what_to_add(company, loaded):
    _, failures = play(company, loaded["a team whose child waits for an approval no one gives"])
    assert failures and 'waits for "Onboard lee as a support agent"' in failures[0]
    assert "is approved by <person>" in failures[0]
