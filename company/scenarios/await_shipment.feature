Feature: Tell the customer when an order ships
  The warehouse says "shipped" with a message to the run; if it does not say so in time, the
  customer is told the order is late. The wait holds no process; in a scenario the clock jumps to
  the deadline when no message is left to send.

  Background:
    Given alice is in group "staff"
    And the run is started by alice

  Scenario: the warehouse says the order shipped
    When await-shipment runs with
      | order_id | 1001 |
    And the run receives a message on "shipped" with
      | carrier  | posti    |
      | tracking | JJFI6001 |
    Then the run succeeds
    And the run's output contains
      | shipped  | true     |
      | tracking | JJFI6001 |
    And ada@example.com was told "Your order 1001 is on its way"
    And the ledger shows "message.received" with
      | topic | shipped |
      | by    | alice   |

  Scenario: the message never comes, and the customer hears the order is late
    When await-shipment runs with
      | order_id     | 1001 |
      | within_hours | 24   |
    Then the run succeeds
    And the run's output contains
      | shipped | false |
    And ada@example.com was told "Your order 1001 is running late"
    And the ledger does not show "message.received"

  Scenario: the order waits for the warehouse until the message comes
    When await-shipment runs with
      | order_id | 1002 |
    Then the run is waiting
    And shop.customer.notify was not called
