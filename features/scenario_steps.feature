Feature: The generic steps
  The steps every company's scenarios can use, shown on the example company.

  Background:
    Given alice is in groups "staff, support"
    And the run is started by alice

  Scenario: a vendor's state is set before the run, and read after it
    Given the shop's state at "orders.3001" is
      """
      {"order_id": "3001", "customer": "lin@example.com", "total_cents": 800, "refunded_cents": 0, "status": "paid"}
      """
    When refund runs with
      """
      {"order_id": "3001", "amount_cents": 800}
      """
    And "Refund needs finance" is approved by finance-lead
    Then the run succeeds
    And the shop's state at "orders.3001.status" is refunded
    And the shop's state contains
      """
      {"orders": {"3001": {"refunded_cents": 800}}, "refunds": [{"order_id": "3001", "amount_cents": 800}]}
      """

  Scenario: a fake is seeded by calling one of its operations
    Given shop.customer.notify was called with
      | customer | ada@example.com |
      | subject  | Welcome         |
    When follow-up runs with
      | order_id | 1001 |
    Then the shop's state at "messages" has 2 items
    And shop.customer.notify reached the vendor 1 time
    And shop.customer.notify was called with
      """
      {"customer": "ada@example.com", "subject": "How is your order?"}
      """

  Scenario: a call the policy denied was attempted, not made
    Given the run is started by walk-in
    When follow-up runs with
      | order_id | 1001 |
    Then shop.customer.notify was not called
    And the ledger shows "op.called" with
      | op | shop.customer.notify |
    And the run fails with "policy_denied"

  Scenario: the ledger in order, and approvals decided by id
    When refund runs with
      | order_id     | 1002 |
      | amount_cents | 100  |
    And "approval-1" is approved by finance-lead
    Then the ledger shows, in order:
      """
      run.started
      op.called
      op.called
      approval.requested
      approval.decided
      op.called
      run.finished
      """
    And the ledger shows "approval.requested" 1 time
    And the ledger shows "approval.requested" with
      | title    | Refund needs finance |
      | approver | finance-lead         |

  Scenario: a run waiting for a decision the scenario does not make
    When refund runs with
      | order_id     | 1002 |
      | amount_cents | 100  |
    Then the run is waiting
    And shop.order.refund was not called
    And the ledger shows "approval.requested"

  Scenario Outline: a refund of <amount> leaves order 1002 <status>
    Given the shop's state at "orders.1002.total_cents" is 100000
    When refund runs with
      | order_id     | 1002     |
      | amount_cents | <amount> |
    And "Refund needs finance" is approved by finance-lead
    Then the shop's state at "orders.1002.status" is <status>

    Examples:
      | amount | status          |
      | 100000 | refunded        |
      | 500    | partly_refunded |

  Scenario Outline: the same title for every row
    When refund runs with
      | order_id     | 1001     |
      | amount_cents | <amount> |
    And "Refund needs finance" is approved by finance-lead
    Then order 1001 was refunded <amount>

    Examples:
      | amount |
      | 10     |
      | 20     |
