Feature: Onboard a team of support agents
  One onboard-agent run per new hire, all started first and then waited for together. Each child
  asks its own sign-offs: the lead's, then security's for the staff access.

  Background:
    Given alice is in group "staff"
    And sam is in group "security"
    And the run is started by alice

  Scenario: two agents are onboarded, each with both sign-offs
    When support.onboard-team runs with
      | usernames | ["robin", "kim"] |
    And "Onboard robin as a support agent" is approved by support-lead
    And "Onboard kim as a support agent" is approved by support-lead
    And "shop.staff.grant needs group security" is approved by sam
    And "shop.staff.grant needs group security" is approved by sam
    Then the run succeeds
    And the ledger shows "run.child_started" 2 times
    And the ledger shows "run.child_ended" 2 times
    And the run's output contains
      """
      {"onboarded": [{"username": "robin", "granted": "support"}, {"username": "kim", "granted": "support"}]}
      """
    And the shop's state at "staff" has 2 items

  Scenario: security turns one agent down, and the team's run fails with that agent's code
    When support.onboard-team runs with
      | usernames | ["robin", "kim"] |
    And "Onboard robin as a support agent" is approved by support-lead
    And "Onboard kim as a support agent" is approved by support-lead
    And "shop.staff.grant needs group security" is rejected by sam
    Then the run fails with "approval_rejected"
    And the ledger shows "run.child_ended" with
      | status | failed |
