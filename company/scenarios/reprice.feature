Feature: Publish new prices
  New prices for several products go out as one fan-out. Publishing a price is idempotent, so a
  failed or lost publish is tried again with the same idempotency key. Reprice asks for no
  approval, so it has no rejected approval.

  Background:
    Given alice is in group "staff"
    And the run is started by alice

  Scenario: two prices are published
    When reprice runs with
      """
      {"prices": [{"sku": "mug", "price_cents": 1600}, {"sku": "tee", "price_cents": 2700}]}
      """
    Then the run succeeds
    And shop.product.price was called with
      | sku         | mug  |
      | price_cents | 1600 |
    And shop.product.price was called with
      | sku         | tee  |
      | price_cents | 2700 |
    And the shop's state at "products" is
      """
      {"mug": 1600, "tee": 2700, "cap": 1800}
      """
    And the run's output contains
      """
      {"published": ["mug", "tee"]}
      """

  Scenario: prices made up from the schema are published
    When reprice runs
    Then the run succeeds
    And shop.product.price was called

  Scenario: the shop fails once while a price is published, and it is published again
    Given shop.product.price fails once
    When reprice runs with
      | prices | [{"sku": "cap", "price_cents": 1900}] |
    Then the run succeeds
    And shop.product.price reached the vendor 2 times
    And the shop's state at "products.cap" is 1900

  Scenario: the shop's reply to a publish is lost: the publish is repeated and takes effect once
    Given shop.product.price loses its reply once
    When reprice runs with
      | prices | [{"sku": "mug", "price_cents": 1450}] |
    Then the run succeeds
    And shop.product.price reached the vendor 2 times
    And the ledger shows "op.called" with
      | op      | shop.product.price |
      | attempt | 2                  |
    And the shop's state at "products.mug" is 1450

  Scenario: someone outside staff cannot publish prices
    Given the run is started by walk-in
    When reprice runs with
      | prices | [{"sku": "mug", "price_cents": 1} ] |
    Then the run fails with "policy_denied"
    And shop.product.price was not called
    And the shop's state at "products.mug" is 1500
