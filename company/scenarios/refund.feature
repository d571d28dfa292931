Feature: Refund an order
  A refund reads the order, waits for finance to sign off on the money (the policy holds every
  money call for finance-lead), refunds, tells the customer, and keeps a note of it in the
  company's "notes" collection (one note per order).

  Background:
    Given alice is in group "staff"
    And the run is started by alice

  Scenario: finance approves a refund
    Given order 1001 exists
    When refund runs with
      | order_id     | 1001               |
      | amount_cents | 1500               |
      | reason       | damaged in transit |
    And "Refund needs finance" is approved by finance-lead with note "fine"
    Then order 1001 was refunded 1500
    And ada@example.com was told "Your refund for order 1001"
    And the shop's state at "orders.1001.status" is "partly_refunded"
    And the ledger shows "approval.decided" with
      | by   | finance-lead |
      | note | fine         |
    And the run succeeds
    And the run's output contains
      | refund_id    | re_1 |
      | amount_cents | 1500 |
    And data.notes.put was called
    And the collection "notes" has a record "1001" with
      | customer       | ada@example.com                      |
      | text           | Refunded 15.00: damaged in transit   |
      | refund_id      | re_1                                 |
      | refunded_cents | 1500                                 |
    And the data's state at "notes.1001.version" is 1

  Scenario: a second refund of an order replaces its note
    Given order 1001 exists
    And the collection "notes" holds
      """
      {"order_id": "1001", "customer": "ada@example.com", "text": "Refunded 2.00: first", "refunded_cents": 200}
      """
    When refund runs with
      | order_id     | 1001 |
      | amount_cents | 300  |
    And "Refund needs finance" is approved by finance-lead
    Then the run succeeds
    And the collection "notes" has 1 record
    And the collection "notes" has a record "1001" with
      | text           | Refunded 3.00: customer request |
      | refunded_cents | 300                             |
    And the data's state at "notes.1001.version" is 2

  Scenario: finance rejects a refund
    When refund runs with
      | order_id     | 1002  |
      | amount_cents | 90000 |
    And "Refund needs finance" is rejected by finance-lead with note "too much without a return"
    Then the run fails with "approval_rejected"
    And shop.order.refund was not called
    And shop.customer.notify was not called
    And the shop's state at "refunds" has 0 items
    And data.notes.put was not called
    And the collection "notes" has 0 records

  Scenario: the shop fails once while the order is read, and the read is tried again
    Given shop.order.get fails once
    When refund runs with
      | order_id     | 1001 |
      | amount_cents | 500  |
    And "Refund needs finance" is approved by finance-lead
    Then the run succeeds
    And shop.order.get reached the vendor 2 times
    And the ledger shows "op.called" with
      | op      | shop.order.get |
      | attempt | 2              |
    And order 1001 was refunded 500

  Scenario: the shop's reply to the refund is lost: the run stops and the money moved once
    A refund is not idempotent, so sanoma does not try it again: the run fails, and the shop
    holds exactly one refund.

    Given shop.order.refund loses its reply once
    When refund runs with
      | order_id     | 1001 |
      | amount_cents | 700  |
    And "Refund needs finance" is approved by finance-lead
    Then the run fails with "driver_failed"
    And shop.order.refund reached the vendor 1 time
    And the shop's state at "refunds" has 1 item
    And the shop's state at "orders.1001.refunded_cents" is 700
    And shop.customer.notify was not called
    And the collection "notes" has no record "1001"

  Scenario: someone outside staff cannot refund, even with finance's sign-off
    Given walk-in is in group "visitors"
    And the run is started by walk-in
    When refund runs with
      | order_id     | 1001 |
      | amount_cents | 500  |
    Then the run fails with "policy_denied"
    And the ledger does not show "approval.requested"
    And shop.order.get was called
    And shop.order.refund was not called
    And the shop's state at "refunds" has 0 items
