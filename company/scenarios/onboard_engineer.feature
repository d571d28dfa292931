Feature: Onboard an engineer on GitHub
  An engineer joins a team of the company's GitHub organization. Joining grants access to the
  team's repositories, so the security group approves it first (the policy holds every access call
  for group security). GitHub sets a membership with a PUT: an add is safe to send again, and a
  person not yet in the organization is invited.

  Background:
    Given alice is in group "staff"
    And sam is in group "security"
    And the run is started by alice
    And the github's state at "members" is
      """
      ["ada-l", "linus-t"]
      """

  Scenario: security approves and the engineer joins the team
    When onboard-engineer runs with
      | username | ada-l |
    And "github.team.add_member needs group security" is approved by sam with note "welcome"
    Then ada-l was added to the team developers
    And github.team.add_member was called with
      | team     | developers |
      | username | ada-l      |
      | role     | member     |
    And the run succeeds
    And the run's output contains
      | state | active |
      | added | true   |
    And the github's state at "teams.developers.memberships.ada-l.role" is "member"
    And the ledger shows "approval.decided" with
      | by   | sam     |
      | note | welcome |

  Scenario: someone not yet in the organization is invited, and stays pending until they accept
    When onboard-engineer runs with
      | username | grace-h    |
      | team     | security   |
      | role     | maintainer |
    And "github.team.add_member needs group security" is approved by sam
    Then the run succeeds
    And the run's output contains
      | state | pending |
    And the github's state at "teams.security.memberships.grace-h" is
      """
      {"role": "maintainer", "state": "pending"}
      """

  Scenario: an engineer already in the team is not asked about again
    Given the github's state at "teams.developers.memberships" is
      """
      {"linus-t": {"role": "maintainer", "state": "active"}}
      """
    When onboard-engineer runs with
      | username | linus-t |
    Then the run succeeds
    And the run's output contains
      | added | false |
    And github.team.members was called
    And github.team.add_member was not called
    And the ledger does not show "approval.requested"

  Scenario: security rejects and nobody joins
    When onboard-engineer runs with
      | username | ada-l |
    And "github.team.add_member needs group security" is rejected by sam with note "not before the contract"
    Then the run fails with "approval_rejected"
    And github.team.add_member was not called
    And the github's state at "teams.developers.memberships" is
      """
      {}
      """

  Scenario: GitHub's reply to the add is lost: the add is sent again and the engineer is in the team once
    Setting a membership is a PUT, idempotent at GitHub, so the engine tries it again.

    Given github.team.add_member loses its reply once
    When onboard-engineer runs with
      | username | ada-l |
    And "github.team.add_member needs group security" is approved by sam
    Then the run succeeds
    And github.team.add_member reached the vendor 2 times
    And the github's state at "teams.developers.memberships" has 1 item

  Scenario: someone outside staff cannot add anyone: the call is refused before security is asked
    Given the run is started by walk-in
    When onboard-engineer runs with
      | username | ada-l |
    Then the run fails with "policy_denied"
    And github.team.members was called
    And github.team.add_member was not called
    And the ledger does not show "approval.requested"
