Feature: Onboard a support agent
  The new agent's lead signs off first (the workflow asks), then the security group must approve
  the staff access itself (the policy holds every access call for group security).

  Background:
    Given alice is in group "staff"
    And sam is in group "security"
    And the run is started by alice

  Scenario: the lead and security approve
    When support.onboard-agent runs with
      | username | robin |
    And "Onboard robin as a support agent" is approved by support-lead
    And "shop.staff.grant needs group security" is approved by sam
    Then shop.staff.grant was called with
      | username | robin   |
      | role     | support |
    And the run succeeds
    And the run's output contains
      | granted       | support      |
      | signed_off_by | support-lead |
    And the shop's state at "staff" is
      """
      [{"username": "robin", "role": "support"}]
      """

  Scenario: decisions written in another order still reach their own approvals
    When support.onboard-agent runs with
      | username | kim |
    And "shop.staff.grant needs group security" is approved by sam
    And "Onboard kim as a support agent" is approved by support-lead
    Then the run succeeds
    And the ledger shows "approval.decided" with
      | approval | approval-1   |
      | by       | support-lead |
    And the ledger shows "approval.decided" with
      | approval | approval-2 |
      | by       | sam        |

  Scenario: approvals decided by their ids
    When support.onboard-agent runs with
      | username | lee          |
      | lead     | support-lead |
    And "approval-1" is approved by support-lead
    And "approval-2" is approved by sam
    Then the run succeeds

  Scenario: the lead rejects
    When support.onboard-agent runs with
      | username | robin |
    And "Onboard robin as a support agent" is rejected by support-lead with note "not this week"
    Then the run fails with "approval_rejected"
    And shop.staff.grant was not called
    And the ledger does not show "op.called"

  Scenario: security rejects the access
    When support.onboard-agent runs with
      | username | robin |
    And "Onboard robin as a support agent" is approved by support-lead
    And "shop.staff.grant needs group security" is rejected by sam
    Then the run fails with "approval_rejected"
    And shop.staff.grant was not called
    And the shop's state at "staff" has 0 items

  Scenario: the shop fails the grant once: access is not granted twice, so the run fails
    Granting access is not idempotent: a failed grant is not tried again.

    Given shop.staff.grant fails once
    When support.onboard-agent runs with
      | username | robin |
    And "Onboard robin as a support agent" is approved by support-lead
    And "shop.staff.grant needs group security" is approved by sam
    Then the run fails with "driver_failed"
    And shop.staff.grant reached the vendor 1 time
    And the shop's state at "staff" has 0 items

  Scenario: the shop's reply to the grant is lost: the run stops and the access was granted once
    Given shop.staff.grant loses its reply once
    When support.onboard-agent runs with
      | username | robin |
    And "Onboard robin as a support agent" is approved by support-lead
    And "shop.staff.grant needs group security" is approved by sam
    Then the run fails with "driver_failed"
    And the shop's state at "staff" has 1 item

  Scenario: someone outside staff cannot grant access, even with both sign-offs
    Given the run is started by walk-in
    When support.onboard-agent runs with
      | username | robin |
    And "Onboard robin as a support agent" is approved by support-lead
    Then the run fails with "policy_denied"
    And shop.staff.grant was not called
