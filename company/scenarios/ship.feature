Feature: Ship an order
  The carrier's pickup is booked, then the customer gets the tracking number. The carrier takes
  every booking anew (it ignores idempotency keys), so a booking is never sent twice blindly.

  Background:
    Given alice is in group "staff"
    And the run is started by alice

  Scenario: the pickup is booked and the customer told the tracking number
    Given order 1001 exists
    When ship runs with
      | order_id | 1001 |
      | carrier  | dhl  |
    Then the run succeeds
    And order 1001 was booked with dhl
    And ada@example.com was told "Your order 1001 is on its way"
    And the ledger shows "run.tagged" 2 times
    And the run's output contains
      | tracking | DHL1001 |

  Scenario: the carrier's reply is lost: the run stops and the carrier booked once
    Given shop.shipment.book loses its reply once
    When ship runs with
      | order_id | 1001 |
    Then the run fails with "driver_failed"
    And shop.shipment.book reached the vendor 1 time
    And the shop's state at "shipments" has 1 item
    And shop.customer.notify was not called

  Scenario: someone outside staff may not book a pickup
    Given the run is started by walk-in
    When ship runs with
      | order_id | 1001 |
    Then the run fails with "policy_denied"
    And the shop's state at "shipments" has 0 items
