Feature: Send an invoice
  An invoice is drafted at once, but it is sent only when Olivia approves (the policy holds every
  send for her).

  Background:
    Given sam is in group "staff"
    And the run is started by sam

  Scenario: Olivia approves, and the invoice is sent
    When send-invoice runs with
      | customer_id  | c-1  |
      | amount_cents | 1200 |
    And "Sending an invoice needs Olivia" is approved by olivia
    Then invoice inv-1 was sent
    And the run succeeds
    And the run's output contains
      | invoice_id | inv-1           |
      | sent_to    | ada@example.com |

  Scenario: Olivia rejects, and nothing is sent
    When send-invoice runs with
      | customer_id  | c-1  |
      | amount_cents | 9900 |
    And "Sending an invoice needs Olivia" is rejected by olivia with note "wrong amount"
    Then the run fails with "approval_rejected"
    And billing.invoice.send was not called
