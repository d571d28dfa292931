Feature: The daily refund budget
  Refunds through the shop (shop.order.refund) and through Stripe (stripe.refund.create) may add up
  to 1,000.00 EUR a day together (policies/budget.cedar). Each refund waits for finance as always
  ("Refund needs finance"); the refund that would take the day past the budget is held as "Refund
  over the daily budget" instead, for the same approver, who sees how much was refunded today
  beside the budget. What a refund would add is its amount; what the day holds is every refund
  decided before it, those still under way included. Finance's sign-off lifts only the holds it
  was asked for: a refund approved as "Refund needs finance" that the day's other refunds took past
  the budget meanwhile waits for "Refund over the daily budget" too.

  Background:
    Given alice is in group "staff"
    And the run is started by alice

  Scenario: a refund under the budget goes through with finance's usual sign-off
    Given shop.order.refund has spent 60000 today
    When refund runs with
      | order_id     | 1002  |
      | amount_cents | 30000 |
    And "Refund needs finance" is approved by finance-lead
    Then the run succeeds
    And the ledger shows "approval.requested" 1 time
    And the ledger shows "approval.requested" with
      | title | Refund needs finance |
    And order 1002 was refunded 30000
    And shop.order.refund has spent 90000 today

  Scenario: a refund that reaches the budget exactly is still under it
    Given shop.order.refund has spent 90000 today
    When refund runs with
      | order_id     | 1002  |
      | amount_cents | 10000 |
    And "Refund needs finance" is approved by finance-lead
    Then the run succeeds
    And shop.order.refund has spent 100000 today

  Scenario: the refund that would pass the budget is held for finance
    Given shop.order.refund has spent 90000 today
    When refund runs with
      | order_id     | 1002  |
      | amount_cents | 20000 |
    Then the run is waiting
    And the ledger shows "approval.requested" with
      | title    | Refund over the daily budget |
      | approver | finance-lead                 |
    And shop.order.refund was not called
    And shop.order.refund has spent 90000 today

  Scenario: finance lets the refund over the budget through, and it counts
    Given shop.order.refund has spent 90000 today
    When refund runs with
      | order_id     | 1002  |
      | amount_cents | 20000 |
    And "Refund over the daily budget" is approved by finance-lead with note "a return we expected"
    Then the run succeeds
    And order 1002 was refunded 20000
    And shop.order.refund has spent 110000 today

  Scenario: a refund refused by finance spends nothing
    Given shop.order.refund has spent 90000 today
    When refund runs with
      | order_id     | 1002  |
      | amount_cents | 20000 |
    And "Refund over the daily budget" is rejected by finance-lead
    Then the run fails with "approval_rejected"
    And shop.order.refund has spent 90000 today

  Scenario: yesterday's refunds do not count today
    Given shop.order.refund has spent 90000 today
    And 1 day passes
    When refund runs with
      | order_id     | 1002  |
      | amount_cents | 20000 |
    And "Refund needs finance" is approved by finance-lead
    Then the run succeeds

  Scenario: what Stripe refunded today counts against a refund through the shop
    Given stripe.refund.create has spent 90000 EUR today
    When refund runs with
      | order_id     | 1002  |
      | amount_cents | 20000 |
    Then the run is waiting
    And the ledger shows "approval.requested" with
      | title    | Refund over the daily budget |
      | approver | finance-lead                 |
    And shop.order.refund was not called

  Scenario: finance's usual sign-off does not cover the budget that other refunds used up meanwhile
    Given finance-lead is in group "finance"
    And shop.order.refund has spent 60000 today
    When refund runs with
      | order_id     | 1002  |
      | amount_cents | 30000 |
    Then the run is waiting
    And the ledger shows "approval.requested" 1 time
    When shop.order.refund spends 20000 more today, then "Refund needs finance" is approved by finance-lead
    Then the run is waiting
    And the ledger shows "approval.requested" 2 times
    And the ledger shows "approval.requested" with
      | title    | Refund over the daily budget |
      | approver | finance-lead                 |
    And shop.order.refund was not called
    And shop.order.refund has spent 80000 today

  Scenario: a refund through Stripe that would take the day past the budget waits for finance
    Given Stripe holds a card payment pi_1002 of 50000 EUR
    And shop.order.refund has spent 90000 today
    When refund-payment runs with
      | payment_intent | pi_1002 |
      | amount         | 20000   |
    Then the run is waiting
    And the ledger shows "approval.requested" with
      | title    | Refund over the daily budget |
      | approver | finance-lead                 |
    And stripe.refund.create was not called
    And Stripe holds 0 refunds of payment pi_1002
