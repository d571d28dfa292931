Feature: Send the newsletter
  The newsletter is drafted as a Resend broadcast to its segment, then sent. Sending to the whole
  segment waits for one of the owners (policies/newsletter.cedar); Resend does not read idempotency
  keys on broadcasts, so a send is never tried twice blindly.

  Background:
    Given alice is in group "staff"
    And sam is in group "owners"
    And the run is started by alice

  Scenario: an owner approves and the broadcast is sent once
    When newsletter runs with
      | subject | December news      |
      | html    | <p>Hello, all!</p> |
    And "Newsletter needs an owner" is approved by sam with note "good to go"
    Then the run succeeds
    And a broadcast "December news" was drafted
    And broadcast bc_1 was sent
    And resend.broadcast.send reached the vendor 1 time
    And the resend's state at "broadcasts.bc_1.status" is "sent"
    And the resend's state at "delivered" has 1 item
    And the run's output contains
      | broadcast_id | bc_1 |

  Scenario: an owner rejects and the draft stays a draft
    When newsletter runs with
      | subject | Too early      |
      | html    | <p>Draft</p>   |
    And "Newsletter needs an owner" is rejected by sam with note "not yet"
    Then the run fails with "approval_rejected"
    And resend.broadcast.send was not called
    And the resend's state at "broadcasts.bc_1.status" is "draft"

  Scenario: Resend's reply to the send is lost: the run stops and the broadcast went out once
    Given resend.broadcast.send loses its reply once
    When newsletter runs with
      | subject | December news |
      | html    | <p>Hello</p>  |
    And "Newsletter needs an owner" is approved by sam
    Then the run fails with "driver_failed"
    And resend.broadcast.send reached the vendor 1 time
    And the resend's state at "delivered" has 1 item

  Scenario: a segment Resend does not have is refused and nothing is sent
    When newsletter runs with
      | subject    | December news |
      | html       | <p>Hello</p>  |
      | segment_id | seg_nobody    |
    Then the run fails with "driver_failed"
    And resend.broadcast.send was not called
    And the ledger does not show "approval.requested"
