"""The collection steps, on the example company's `notes` collection (the `data` vendor's fake):
seeding a record, and expectations about records that pass and that fail saying why."""
from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest
from django.conf import settings

from features.library import load_scenarios
from features.library.errors import StepFailed
from features.library.world import ScenarioWorld
from runs.config.registry import set_config
from runs.config.resolution import load_config

FEATURE = '''
Feature: notes
  Background:
    Given alice is in group "staff"
    And the run is started by alice

  Scenario: a note kept after a refund
    Given order 1001 exists
    And the collection "notes" holds
      | order_id | 1001            |
      | customer | ada@example.com |
      | text     | earlier         |
    And data.notes.put was called with
      """
      {"record": {"order_id": "2002", "customer": "bo@example.com", "text": "seeded"}}
      """
    When refund runs with
      | order_id     | 1001 |
      | amount_cents | 500  |
    And "Refund needs finance" is approved by finance-lead
    Then the collection "notes" has 2 records
    And the collection "notes" has a record "1001" with
      | refunded_cents | 500  |
      | refund_id      | re_1 |
    And the collection "notes" has a record "2002"
    And the collection "notes" has no record "3003"
    And the data's state at "notes.1001.version" is 2
    And data.notes.put reached the vendor 1 time
    And data.notes.put was called with
      """
      {"record": {"order_id": "1001", "refunded_cents": 500}}
      """
    And the collection "notes" has 3 records
    And the collection "notes" has a record "1001" with
      | refunded_cents | 9 |
    And the collection "notes" has no record "2002"
    And the collection "notes" has a record "3003"
'''

UNKNOWN = '''
Feature: unknown
  Scenario: a collection the config does not have
    When refund runs
    Then the collection "letters" has 1 record
'''


@pytest.fixture
def company():
    config = load_config(Path(settings.BASE_DIR) / "company", fakes="instance")
    set_config(config)
    yield config
    set_config(None)


def scenarios(config, tmp_path, text):
    path = tmp_path / "notes.feature"
    path.write_text(dedent(text))
    return load_scenarios(config, files=[path])


@pytest.mark.django_db
def test_collection_steps_seed_and_check_the_records(company, tmp_path):
    loaded = scenarios(company, tmp_path, FEATURE)
    assert loaded.problems == []
    scenario = loaded.scenarios[0]
    world = ScenarioWorld(company, scenario)
    world.prepare()
    failures = []
    for index, step in enumerate(scenario.steps):
        try:
            world.execute(index)
        except StepFailed as failed:
            failures.append((step.text, str(failed)))
    assert world.run is not None and world.run.status == "finished"
    wrong = [text for text, _ in failures]
    assert wrong == ['the collection "notes" has 3 records', 'the collection "notes" has a record "1001" with',
                     'the collection "notes" has no record "2002"', 'the collection "notes" has a record "3003"']
    said = [message.split("\n", 1)[1] for _, message in failures]
    assert said[0] == 'collection notes has 2 record(s), not 3: ["1001", "2002"]'
    assert said[1].startswith("the record '1001' of notes is {") and 'does not contain {"refunded_cents": 9}' in said[1]
    assert said[2].startswith("collection notes has a record '2002': ")
    assert said[3] == "collection notes has no record '3003'; its keys are [\"1001\", \"2002\"]"


def test_an_unknown_collection_is_a_problem_naming_the_ones_there_are(company, tmp_path):
    loaded = scenarios(company, tmp_path, UNKNOWN)
    assert [str(p) for p in loaded.problems] and 'no collection "letters"; the config has notes' in str(
        loaded.problems[0])
