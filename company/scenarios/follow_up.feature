Feature: Follow up on an order
  Some time after an order, the shop asks the customer how it went. The sleep does not wait on
  the wall clock in a scenario; follow-up asks for no approval, so it has no rejected approval.

  Background:
    Given alice is in group "staff"
    And the run is started by alice

  Scenario: the customer is asked how their order is
    Given order 1002 exists
    When follow-up runs with
      | order_id | 1002 |
    Then the run succeeds
    And the ledger shows "sleep.started"
    And grace@example.com was told "How is your order?"

  Scenario: the customer is asked only once a week has passed
    When follow-up runs with
      | order_id      | 1001   |
      | after_seconds | 604800 |
    Then the run is waiting
    And shop.customer.notify was not called
    When 6 days pass
    Then the run is waiting
    When 1 day passes
    Then the run succeeds
    And ada@example.com was told "How is your order?"

  Scenario: the shop is rate limited once while the order is read, and the read is tried again
    Given shop.order.get is rate limited once
    When follow-up runs with
      | order_id | 1001 |
    Then the run succeeds
    And shop.order.get reached the vendor 2 times
    And the ledger shows "op.called" with
      | op      | shop.order.get |
      | attempt | 2              |

  Scenario: the shop's reply to the message is lost: the run stops and the customer got one message
    A message is not idempotent, so it is not sent again.

    Given shop.customer.notify loses its reply once
    When follow-up runs with
      | order_id | 1001 |
    Then the run fails with "driver_failed"
    And shop.customer.notify reached the vendor 1 time
    And the shop's state at "messages" has 1 item
    And the shop's state at "messages.0.customer" is "ada@example.com"

  Scenario: someone outside staff may read the order but not write to the customer
    Given the run is started by walk-in
    When follow-up runs with
      | order_id | 1001 |
    Then the run fails with "policy_denied"
    And shop.order.get was called
    And shop.customer.notify was not called
    And the shop's state at "messages" has 0 items

  Scenario: an order the shop does not have
    When follow-up runs with
      | order_id | 9999 |
    Then the run fails with "driver_failed"
    And shop.order.get was not called
    And the ledger does not show "sleep.started"
