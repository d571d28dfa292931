"""Stripe's real driver (the official library over httpx) against the local Stripe server: Stripe's
answers, its errors read as DriverErrors, the call's key and deadline, pagination."""
from __future__ import annotations

import time

import pytest

from connectors import CallContext, DriverError
from connectors.errors import DriverTimeout
from connectors.vendors.stripe import make_driver, make_fake, stripe
from connectors.vendors.stripe.fake import paid as fake_paid
from connectors.vendors.stripe.models import PaymentIntentCreate, PaymentIntentRef, RefundCreate, RefundQuery, RefundRef
from connectors.vendors.stripe.tests.stripe_server import API_KEY as KEY
from connectors.vendors.stripe.tests.stripe_server import StripeServer, decode_form


@pytest.fixture
def server():
    with StripeServer() as running:
        yield running


@pytest.fixture
def driver():
    return make_driver()


def ctx(server: StripeServer, *, key: str = "run_1:3", timeout: float = 5.0, api_key: str = KEY) -> CallContext:
    return CallContext(idempotency_key=key, run_id="run_1", op_id="stripe.refund.create", timeout=timeout,
                       deadline=time.time() + timeout,
                       secrets={"STRIPE_API_KEY": api_key, "STRIPE_API_BASE": server.url})


def refund(driver, server, **fields):
    return driver.call("stripe.refund.create", RefundCreate(**fields), ctx(server, key=fields.pop("key", "run_1:3")))


def test_a_refund_is_one_form_encoded_post_with_the_calls_key_and_no_retries_of_the_librarys(server, driver):
    pi = server.pay(4500, "eur")
    got = driver.call("stripe.refund.create", RefundCreate(payment_intent=pi, amount=1500, currency="EUR"),
                      ctx(server))
    assert got["amount"] == 1500 and got["currency"] == "eur" and got["payment_intent"] == pi
    assert got["id"].startswith("re_") and got["status"] == "succeeded"
    [post] = server.requests_to("POST", "/v1/refunds")
    assert decode_form(post.body) == {"payment_intent": pi, "amount": "1500"}
    assert post.header("Idempotency-Key") == "run_1:3"
    assert post.header("Authorization") == f"Bearer {KEY}"
    assert post.header("Content-Type").startswith("application/x-www-form-urlencoded")


def test_the_same_key_replays_the_first_refund_and_stripe_holds_one(server, driver):
    pi = server.pay(4500)
    first = driver.call("stripe.refund.create", RefundCreate(payment_intent=pi, amount=1000, currency="EUR"),
                        ctx(server))
    again = driver.call("stripe.refund.create", RefundCreate(payment_intent=pi, amount=1000, currency="EUR"),
                        ctx(server))
    assert again["id"] == first["id"]
    assert len(server.refunds_of(pi)) == 1
    assert len(server.requests_to("POST", "/v1/refunds")) == 2


def test_the_same_key_with_other_params_is_stripes_idempotency_error(server, driver):
    pi = server.pay(4500)
    driver.call("stripe.refund.create", RefundCreate(payment_intent=pi, amount=1000, currency="EUR"), ctx(server))
    with pytest.raises(DriverError) as raised:
        driver.call("stripe.refund.create", RefundCreate(payment_intent=pi, amount=900, currency="EUR"), ctx(server))
    err = raised.value
    assert (err.status, err.vendor_code, err.retryable) == (400, "idempotency_error", False)
    assert "same parameters" in str(err)
    assert len(server.refunds_of(pi)) == 1


def test_a_lost_answer_tried_again_with_the_key_is_the_first_refund(server, driver):
    pi = server.pay(4500)
    server.lose_answer("/v1/refunds")
    with pytest.raises(DriverError) as raised:
        driver.call("stripe.refund.create", RefundCreate(payment_intent=pi, amount=700, currency="EUR"), ctx(server))
    assert raised.value.retryable is True and raised.value.status is None
    assert len(server.refunds_of(pi)) == 1  # it happened
    again = driver.call("stripe.refund.create", RefundCreate(payment_intent=pi, amount=700, currency="EUR"),
                        ctx(server))
    assert again["amount"] == 700
    assert len(server.refunds_of(pi)) == 1
    assert len(server.requests_to("POST", "/v1/refunds")) == 2  # the library itself never tried again


def test_a_refund_past_what_is_left_is_final_and_names_stripes_code(server, driver):
    pi = server.pay(1000)
    with pytest.raises(DriverError) as raised:
        driver.call("stripe.refund.create", RefundCreate(payment_intent=pi, amount=1500, currency="EUR"), ctx(server))
    err = raised.value
    assert (err.status, err.vendor_code, err.retryable) == (400, "amount_too_large", False)
    assert "amount_too_large" in str(err) and "greater than unrefunded amount" in str(err)
    driver.call("stripe.refund.create", RefundCreate(payment_intent=pi, amount=1000, currency="EUR"),
                ctx(server, key="run_1:4"))
    with pytest.raises(DriverError) as again:
        driver.call("stripe.refund.create", RefundCreate(payment_intent=pi, amount=1, currency="EUR"),
                    ctx(server, key="run_1:5"))
    assert again.value.vendor_code == "charge_already_refunded"


def test_a_refund_in_another_currency_than_the_payments_is_never_sent(server, driver):
    pi = server.pay(1000, "usd")
    with pytest.raises(DriverError) as raised:
        driver.call("stripe.refund.create", RefundCreate(payment_intent=pi, amount=100, currency="EUR"), ctx(server))
    assert raised.value.vendor_code == "currency_mismatch" and "USD, not EUR" in str(raised.value)
    assert not server.requests_to("POST", "/v1/refunds")


def test_an_unknown_payment_is_404_resource_missing(server, driver):
    with pytest.raises(DriverError) as raised:
        driver.call("stripe.payment_intent.get", PaymentIntentRef(id="pi_nope"), ctx(server))
    assert (raised.value.status, raised.value.vendor_code, raised.value.retryable) == (404, "resource_missing", False)
    assert "No such payment_intent" in str(raised.value)


def test_a_429_carries_retry_after_and_is_retryable(server, driver):
    server.rate_limit(retry_after=30)
    with pytest.raises(DriverError) as raised:
        driver.call("stripe.payment_intent.get", PaymentIntentRef(id="pi_x"), ctx(server))
    err = raised.value
    assert (err.status, err.vendor_code, err.retryable, err.retry_after) == (429, "rate_limit", True, 30.0)
    assert len(server.received) == 1  # the library waited for nothing and tried nothing again


def test_stripe_should_retry_overrides_the_status(server, driver):
    server.fault(status=500, headers={"Stripe-Should-Retry": "false"},
                 body={"error": {"type": "api_error", "message": "boom"}})
    with pytest.raises(DriverError) as raised:
        driver.call("stripe.payment_intent.get", PaymentIntentRef(id="pi_x"), ctx(server))
    assert (raised.value.status, raised.value.retryable) == (500, False)
    server.fault(status=409, headers={"Stripe-Should-Retry": "true"},
                 body={"error": {"type": "idempotency_error", "code": "idempotency_key_in_use", "message": "busy"}})
    with pytest.raises(DriverError) as in_use:
        driver.call("stripe.payment_intent.get", PaymentIntentRef(id="pi_x"), ctx(server))
    assert (in_use.value.status, in_use.value.vendor_code, in_use.value.retryable) == (
        409, "idempotency_key_in_use", True)


def test_a_5xx_is_retryable_and_a_card_error_final(server, driver):
    server.fault(status=503, body={"error": {"type": "api_error", "message": "try later"}})
    with pytest.raises(DriverError) as raised:
        driver.call("stripe.payment_intent.get", PaymentIntentRef(id="pi_x"), ctx(server))
    assert (raised.value.status, raised.value.retryable) == (503, True)
    server.fault(status=402, body={"error": {"type": "card_error", "code": "card_declined", "param": "payment_method",
                                             "message": "Your card was declined."}})
    with pytest.raises(DriverError) as declined:
        driver.call("stripe.payment_intent.create",
                    PaymentIntentCreate(amount=500, currency="eur", payment_method="pm_card_visa", confirm=True),
                    ctx(server))
    assert (declined.value.status, declined.value.vendor_code, declined.value.retryable) == (
        402, "card_declined", False)
    assert "card_error card_declined" in str(declined.value) and "Your card was declined." in str(declined.value)


def test_a_bad_key_is_401_final_and_a_missing_one_is_named(server, driver):
    with pytest.raises(DriverError) as raised:
        driver.call("stripe.payment_intent.get", PaymentIntentRef(id="pi_x"), ctx(server, api_key="sk_test_revoked"))
    assert (raised.value.status, raised.value.retryable) == (401, False)
    assert "Invalid API Key provided: sk_test_****" in str(raised.value)
    assert len(server.received) == 1
    context = CallContext(idempotency_key="k", run_id="r", op_id="stripe.payment_intent.get", secrets={})
    with pytest.raises(DriverError) as missing:
        driver.call("stripe.payment_intent.get", PaymentIntentRef(id="pi_x"), context)
    assert "STRIPE_API_KEY must be set" in str(missing.value) and missing.value.retryable is False


def test_an_answer_slower_than_the_calls_deadline_is_a_timeout(server, driver):
    pi = server.pay(1000)
    server.fault(delay=2.0, path="/v1/payment_intents/")
    began = time.monotonic()
    with pytest.raises(DriverTimeout) as raised:
        driver.call("stripe.payment_intent.get", PaymentIntentRef(id=pi), ctx(server, timeout=0.5))
    assert time.monotonic() - began < 1.8
    assert raised.value.retryable is True and "did not answer" in str(raised.value)


def test_a_payment_intent_is_created_with_the_key_and_read_back(server, driver):
    made = driver.call("stripe.payment_intent.create",
                       PaymentIntentCreate(amount=2500, currency="EUR", payment_method="pm_card_visa", confirm=True),
                       ctx(server, key="run_2:1"))
    assert (made["status"], made["amount_received"], made["currency"]) == ("succeeded", 2500, "eur")
    [post] = server.requests_to("POST", "/v1/payment_intents")
    assert post.header("Idempotency-Key") == "run_2:1"
    assert decode_form(post.body)["currency"] == "eur"
    got = driver.call("stripe.payment_intent.get", PaymentIntentRef(id=made["id"]), ctx(server))
    assert got["id"] == made["id"]
    assert not server.requests_to("GET", f"/v1/payment_intents/{made['id']}")[0].header("Idempotency-Key")


def test_refunds_are_listed_across_pages_newest_first(server, driver):
    pi = server.pay(100_000)
    other = server.pay(5000)
    for n in range(205):
        driver.call("stripe.refund.create", RefundCreate(payment_intent=pi, amount=10, currency="EUR"),
                    ctx(server, key=f"run_3:{n}"))
    driver.call("stripe.refund.create", RefundCreate(payment_intent=other, amount=99, currency="EUR"),
                ctx(server, key="run_4:1"))
    got = driver.call("stripe.refund.list", RefundQuery(payment_intent=pi), ctx(server))
    assert len(got["refunds"]) == 205 and got["total"] == 2050
    ids = [r["id"] for r in got["refunds"]]
    assert ids == [r["id"] for r in reversed(server.refunds_of(pi))]
    pages = server.requests_to("GET", "/v1/refunds")
    assert [p.query.get("starting_after", [None])[0] for p in pages] == [None, ids[99], ids[199]]
    assert all(p.query["limit"] == ["100"] and p.query["payment_intent"] == [pi] for p in pages)
    one = driver.call("stripe.refund.get", RefundRef(id=ids[0]), ctx(server))
    assert one["id"] == ids[0]


def test_a_500_after_the_effect_is_saved_under_the_key_and_replayed(server, driver):
    pi = server.pay(4500)
    server.fail_after_effect("/v1/refunds")
    for _ in range(2):
        with pytest.raises(DriverError) as raised:
            driver.call("stripe.refund.create", RefundCreate(payment_intent=pi, amount=700, currency="EUR"),
                        ctx(server))
        assert (raised.value.status, raised.value.retryable) == (500, True)
    assert len(server.refunds_of(pi)) == 1
    assert [r.header("Idempotency-Key") for r in server.requests_to("POST", "/v1/refunds")] == ["run_1:3"] * 2


def call(driver, op_id: str, payload: dict, context: CallContext) -> dict:
    return driver.call(op_id, stripe.op(op_id).input.model_validate(payload), context)


def test_a_product_update_unsets_the_metadata_no_longer_declared(server, driver):
    made = call(driver, "stripe.product.create", {"desired": {"id": "prod_mug", "name": "Mug",
                                                             "metadata": {"sku": "mug", "old": "x"}}}, ctx(server))
    assert made["handle"] == "prod_mug" and made["values"]["metadata"] == {"sku": "mug", "old": "x"}
    updated = call(driver, "stripe.product.update", {
        "id": "prod_mug", "changes": {"metadata": {"sku": "mug2"}},
        "desired": {"id": "prod_mug", "name": "Mug", "metadata": {"sku": "mug2"}}}, ctx(server, key="run_1:4"))
    assert updated["values"]["metadata"] == {"sku": "mug2"}
    [post] = server.requests_to("POST", "/v1/products/prod_mug")
    assert decode_form(post.body) == {"metadata": {"old": "", "sku": "mug2"}}
    assert call(driver, "stripe.product.read", {"id": "prod_gone"}, ctx(server)) == {"id": "prod_gone", "gone": True}


@pytest.mark.parametrize(("op", "payload", "paid"), [
    ("stripe.payment_intent.get", {"id": "pi_9"}, None),
    ("stripe.refund.create", {"payment_intent": "pi_9", "amount": 100, "currency": "EUR"}, None),
    ("stripe.refund.get", {"id": "re_9"}, None),
    ("stripe.refund.create", {"amount": 1500, "currency": "EUR"}, (1000, 0)),
    ("stripe.refund.create", {"amount": 1, "currency": "EUR"}, (1000, 1000)),
    ("stripe.refund.create", {"amount": 1500, "currency": "USD"}, (1000, 0)),
])
def test_the_fake_refuses_word_for_word_as_the_driver_reports_stripes_answer(server, driver, op, payload, paid):
    """The same refused call on the fake and on the driver over the local Stripe: the same status,
    code and message, so what the docs show of one is what a user sees of the other."""
    fake = make_fake()
    currency = payload.get("currency", "EUR")
    if paid is not None:
        amount, refunded = paid
        pi = server.pay(amount, currency.lower())
        fake.update(lambda state: fake_paid(state, id=pi, amount=amount, currency=currency) and None)
        if refunded:
            driver.call("stripe.refund.create", RefundCreate(payment_intent=pi, amount=refunded, currency=currency),
                        ctx(server, key="run_1:0"))
            fake.call("stripe.refund.create", {"payment_intent": pi, "amount": refunded, "currency": currency},
                      ctx(server, key="run_1:0"))
        payload = {**payload, "payment_intent": pi}
    operation = stripe.op(op)
    with pytest.raises(DriverError) as real:
        driver.call(op, operation.input.model_validate(payload), ctx(server, key="run_1:1"))
    with pytest.raises(DriverError) as faked:
        fake.call(op, payload, ctx(server, key="run_1:1"))
    assert (faked.value.status, faked.value.vendor_code, faked.value.message) == (
        real.value.status, real.value.vendor_code, real.value.message)
