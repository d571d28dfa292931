Feature: The scenario's clock
  Sleeps inside a scenario never wait on the wall clock. A scenario that moves the clock itself
  ("When 2 days pass") decides when a sleep ends; one that does not has its sleeps skipped. Either
  way the ledger shows the sleep.

  Background:
    Given alice is in group "staff"
    And the run is started by alice

  Scenario: a sleep the scenario does not mention is skipped
    When follow-up runs with
      | order_id      | 1002   |
      | after_seconds | 604800 |
    Then the run succeeds
    And the ledger shows "sleep.started" 1 time
    And grace@example.com was told "How is your order?"

  Scenario: the scenario moves the clock past a two-day sleep
    When follow-up runs with
      | order_id      | 1002   |
      | after_seconds | 172800 |
    Then the run is waiting
    And the ledger shows "sleep.started"
    And shop.customer.notify was not called
    When 1 day passes
    Then the run is waiting
    When 1 day passes
    Then the run succeeds
    And the ledger shows, in order:
      | run.started   |
      | op.called     |
      | sleep.started |
      | op.called     |
      | run.finished  |
