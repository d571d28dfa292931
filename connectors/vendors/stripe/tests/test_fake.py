"""Stripe's fake behaves as Stripe does: a repeated key is the first answer, a refund past what is
left is refused with Stripe's codes, faults queue, and a webhook endpoint's secret is never shown."""
from __future__ import annotations

from typing import Any

import pytest

from connectors import CallContext, DriverError
from connectors.vendors.stripe import make_fake
from connectors.vendors.stripe.fake import paid
from connectors.vendors.stripe.steps import STEPS
from connectors.vendors.stripe.wording import amount_shown


def ctx(key: str = "run_1:1") -> CallContext:
    return CallContext(idempotency_key=key, run_id="run_1", op_id="stripe.refund.create")


@pytest.fixture
def fake():
    made = make_fake()
    made.update(lambda state: paid(state, id="pi_1001", amount=4500, currency="EUR") and None)
    return made


def refund(fake, amount: int, key: str, currency: str = "EUR", payment_intent: str = "pi_1001"):
    return fake.call("stripe.refund.create", {"payment_intent": payment_intent, "amount": amount,
                                              "currency": currency}, ctx(key))


def test_a_repeated_key_is_the_first_refund_and_moves_money_once(fake):
    first = refund(fake, 1500, "run_1:1")
    again = refund(fake, 1500, "run_1:1")
    assert again == first and first["id"].startswith("re_")
    assert len(fake.state["refunds"]) == 1
    assert fake.state["payment_intents"]["pi_1001"]["amount_refunded"] == 1500
    assert [c["outcome"] for c in fake.calls] == ["ok", "repeat"]


def test_a_refund_past_what_is_left_is_refused_with_stripes_codes(fake):
    with pytest.raises(DriverError) as too_much:
        refund(fake, 5000, "run_1:1")
    assert (too_much.value.status, too_much.value.vendor_code, too_much.value.retryable) == (
        400, "amount_too_large", False)
    assert too_much.value.message == ("stripe answered 400 to POST /v1/refunds (invalid_request_error "
                                      "amount_too_large): Refund amount (€50.00) is greater than unrefunded "
                                      "amount on charge (€45.00)")
    refund(fake, 4500, "run_1:2")
    with pytest.raises(DriverError) as none_left:
        refund(fake, 1, "run_1:3")
    assert none_left.value.vendor_code == "charge_already_refunded"
    assert len(fake.state["refunds"]) == 1  # the refused ones changed nothing


def test_an_unknown_payment_and_another_currency_are_refused(fake):
    with pytest.raises(DriverError) as unknown:
        refund(fake, 100, "run_1:1", payment_intent="pi_nope")
    assert (unknown.value.status, unknown.value.vendor_code) == (404, "resource_missing")
    assert unknown.value.message == ("stripe answered 404 to GET /v1/payment_intents/pi_nope "
                                     "(invalid_request_error resource_missing): No such payment_intent: 'pi_nope'")
    with pytest.raises(DriverError) as other:
        refund(fake, 100, "run_1:2", currency="USD")
    assert other.value.vendor_code == "currency_mismatch"
    assert not fake.state["refunds"]


def test_faults_queue_as_for_any_fake(fake):
    fake.rate_limit("stripe.refund.create", retry_after=2)
    with pytest.raises(DriverError) as limited:
        refund(fake, 100, "run_1:1")
    assert (limited.value.status, limited.value.retry_after, limited.value.retryable) == (429, 2.0, True)
    fake.lose_reply("stripe.refund.create")
    with pytest.raises(DriverError):
        refund(fake, 100, "run_1:2")
    assert len(fake.state["refunds"]) == 1  # the lost reply's refund happened
    assert refund(fake, 100, "run_1:2")["id"] == fake.state["refunds"][0]["id"]  # and is the answer to its key
    assert len(fake.state["refunds"]) == 1


def test_refunds_are_listed_newest_first_and_read_by_id(fake):
    ids = [refund(fake, 100, f"run_1:{n}")["id"] for n in range(3)]
    listed = fake.call("stripe.refund.list", {"payment_intent": "pi_1001"}, ctx("k"))
    assert [r["id"] for r in listed["refunds"]] == ids[::-1] and listed["total"] == 300
    assert fake.call("stripe.refund.get", {"id": ids[1]}, ctx("k2"))["amount"] == 100


def test_a_payment_intent_confirmed_with_a_method_is_succeeded_and_refundable(fake):
    made = fake.call("stripe.payment_intent.create", {"amount": 2000, "currency": "eur",
                                                      "payment_method": "pm_card_visa", "confirm": True}, ctx("p1"))
    assert (made["status"], made["currency"], made["amount_received"]) == ("succeeded", "EUR", 2000)
    assert refund(fake, 2000, "r1", payment_intent=made["id"])["amount"] == 2000
    pending = fake.call("stripe.payment_intent.create", {"amount": 2000, "currency": "EUR"}, ctx("p2"))
    assert pending["status"] == "requires_payment_method"
    with pytest.raises(DriverError) as raised:
        refund(fake, 100, "r2", payment_intent=pending["id"])
    assert raised.value.vendor_code == "charge_not_refundable"


def test_a_webhook_endpoint_is_kept_by_url_without_a_secret(fake):
    made = fake.call("stripe.webhook_endpoint.create", {"desired": {
        "url": "https://acme.example/hooks", "enabled_events": ["charge.refunded"]}}, ctx("w1"))
    assert made["id"] == "https://acme.example/hooks" and made["handle"].startswith("we_")
    assert "secret" not in made["values"] and "secret" not in str(fake.state)
    read = fake.call("stripe.webhook_endpoint.read", {"id": made["id"], "handle": made["handle"]}, ctx("w2"))
    assert read["values"]["enabled_events"] == ["charge.refunded"]
    assert fake.call("stripe.webhook_endpoint.read", {"id": made["id"], "handle": "we_other"}, ctx("w3"))["gone"]
    assert fake.call("stripe.webhook_endpoint.delete", {"id": made["id"]}, ctx("w4")) == {
        "id": made["id"], "gone": True}


def test_a_product_by_the_companys_id_cannot_be_made_twice(fake):
    desired = {"id": "prod_mug", "name": "Mug"}
    fake.call("stripe.product.create", {"desired": desired}, ctx("c1"))
    with pytest.raises(DriverError) as raised:
        fake.call("stripe.product.create", {"desired": desired}, ctx("c2"))
    assert raised.value.vendor_code == "resource_already_exists"
    updated = fake.call("stripe.product.update", {"id": "prod_mug", "changes": {"name": "Big mug"},
                                                  "desired": {**desired, "name": "Big mug"}}, ctx("c3"))
    assert updated["values"]["name"] == "Big mug"


class World:
    def __init__(self, fake) -> None:
        self._fake = fake

    def fake(self, vendor: str):
        assert vendor == "stripe"
        return self._fake


def test_the_scenario_steps_seed_and_check_the_fake():
    fake = make_fake()
    world = World(fake)
    steps: dict[str, Any] = {pattern: fn for _, pattern, fn in STEPS}
    steps["Stripe holds a card payment {word} of {int} {word}"](world, "pi_7", 3000, "EUR")
    refund(fake, 1000, "k1", payment_intent="pi_7")
    steps["Stripe's payment {word} has {int} left to refund"](world, "pi_7", 2000)
    steps["Stripe holds {int} refund(s) of payment {word}"](world, 1, "pi_7")
    with pytest.raises(AssertionError, match="has 2000 left to refund, not 3000"):
        steps["Stripe's payment {word} has {int} left to refund"](world, "pi_7", 3000)
    with pytest.raises(AssertionError, match="holds no payment pi_8; it holds pi_1001, pi_1002, pi_7"):
        steps["Stripe holds {int} refund(s) of payment {word}"](world, 0, "pi_8")
    with pytest.raises(AssertionError, match="starts with pi_"):
        steps["Stripe holds a card payment {word} of {int} {word}"](world, "ch_1", 10, "EUR")


@pytest.mark.parametrize(("amount", "currency", "shown"), [
    (1500, "EUR", "€15.00"), (90, "usd", "$0.90"), (99_999_999, "GBP", "£999,999.99"), (1500, "JPY", "¥1,500"),
    (1500, "SEK", "15.00 SEK"),
])
def test_amounts_are_written_as_stripe_writes_them(amount, currency, shown):
    assert amount_shown(amount, currency) == shown
