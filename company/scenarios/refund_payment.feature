Feature: Refund a card payment through Stripe
  The refund reads the payment at Stripe, waits for finance to sign off on the money (the policy
  holds every money call for finance-lead, Stripe's as the shop's), and refunds it. Stripe keeps
  the first answer to a call's idempotency key, so a refund tried again is still one refund.

  Background:
    Given alice is in group "staff"
    And the run is started by alice
    And Stripe holds a card payment pi_1001 of 4500 EUR

  Scenario: finance approves a partial refund
    When refund-payment runs with
      | payment_intent | pi_1001 |
      | amount         | 1500    |
    And "Refund needs finance" is approved by finance-lead with note "damaged in transit"
    Then payment pi_1001 was refunded 1500
    And Stripe's payment pi_1001 has 3000 left to refund
    And the run succeeds
    And the run's output contains
      | amount   | 1500 |
      | currency | EUR  |

  Scenario: finance rejects the refund, and Stripe is never asked
    When refund-payment runs with
      | payment_intent | pi_1001 |
      | amount         | 4500    |
    And "Refund needs finance" is rejected by finance-lead with note "not without the goods back"
    Then the run fails with "approval_rejected"
    And stripe.refund.create was not called
    And Stripe holds 0 refunds of payment pi_1001

  Scenario: Stripe refuses a refund past what is left of the payment
    Given the stripe's state at "payment_intents.pi_1001.amount_refunded" is 4000
    When refund-payment runs with
      | payment_intent | pi_1001 |
      | amount         | 1000    |
    And "Refund needs finance" is approved by finance-lead
    Then the run fails with "driver_failed"
    And stripe.refund.create reached the vendor 1 time
    And Stripe's payment pi_1001 has 500 left to refund

  Scenario: Stripe's answer to the refund is lost: the refund is tried again and moves money once
    Given stripe.refund.create loses its reply once
    When refund-payment runs with
      | payment_intent | pi_1001 |
      | amount         | 700     |
    And "Refund needs finance" is approved by finance-lead
    Then the run succeeds
    And stripe.refund.create reached the vendor 2 times
    And Stripe holds 1 refund of payment pi_1001
    And Stripe's payment pi_1001 has 3800 left to refund

  Scenario: Stripe limits the rate once, and the read is tried again
    Given stripe.payment_intent.get is rate limited once
    When refund-payment runs with
      | payment_intent | pi_1001 |
      | amount         | 500     |
    And "Refund needs finance" is approved by finance-lead
    Then the run succeeds
    And stripe.payment_intent.get reached the vendor 2 times
    And payment pi_1001 was refunded 500
