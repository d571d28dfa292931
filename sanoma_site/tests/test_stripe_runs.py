"""Stripe's real driver in runs through the engine, against the local Stripe server: a money call
whose answer is lost is tried again with its key and is one refund; a 429 with `Retry-After` is
waited out durably; a 5xx is tried again only for an operation that may be; a final 4xx is not."""
from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.test import override_settings
from pydantic import BaseModel

from company.workflows.refund_payment import refund_payment
from connectors.errors import InvalidInput
from connectors.vendors.stripe import stripe
from connectors.vendors.stripe.tests.stripe_server import API_KEY, StripeServer
from runs import selectors, services
from runs.authoring import define_workflow
from runs.config.registry import set_config
from runs.config.resolution import SanomaConfig, resolve_config
from runs.engine import clock
from runs.models import Run, RunStatus
from runs.testing import drain, make_user

REFUND, GET, PRODUCT_CREATE = (stripe.op(f"stripe.{name}") for name in (
    "refund.create", "payment_intent.get", "product.create"))


class RefundInput(BaseModel):
    payment_intent: str
    amount: int


def refund(ctx, input: RefundInput):
    made = ctx.stripe.refund.create({"payment_intent": input.payment_intent, "amount": input.amount,
                                     "currency": "EUR"})
    return {"refund": made.id, "amount": made.amount}


def add_product(ctx, input):
    made = ctx.stripe.product.create({"desired": {"id": "prod_mug", "name": "Mug"}})
    return {"handle": made.handle}


WORKFLOWS = [
    define_workflow(name="stripe-refund", input=RefundInput, uses=[REFUND], run=refund),
    define_workflow(name="stripe-product", uses=[PRODUCT_CREATE], run=add_product),
]


@pytest.fixture
def server(monkeypatch):
    with StripeServer() as running:
        monkeypatch.setenv("STRIPE_API_KEY", API_KEY)
        monkeypatch.setenv("STRIPE_API_BASE", running.url)
        yield running


@pytest.fixture
def engine(db, server):
    make_user("alice", perms=["runs.start_workflow"])
    config = resolve_config(SanomaConfig(connectors=[stripe], workflows=WORKFLOWS))
    set_config(config)
    with override_settings(SANOMA_RETRY_DELAYS=(0.01, 0.02)):
        yield config
    set_config(None)


def run(config, workflow: str, input: dict | None = None) -> Run:
    started = services.start(workflow=workflow, input=input or {}, started_by="alice", config=config)
    drain(config)
    started.refresh_from_db()
    return started


def records(run: Run, kind: str) -> list[dict]:
    return [r for r in selectors.ledger_of(run_id=run.id) if r["type"] == kind]


def test_a_refund_whose_answer_is_lost_is_tried_again_with_its_key_and_is_one_refund(engine, server):
    pi = server.pay(4500)
    server.lose_answer("/v1/refunds")
    done = run(engine, "stripe-refund", {"payment_intent": pi, "amount": 1500})
    assert (done.status, (done.result or {})["amount"]) == (RunStatus.FINISHED, 1500), done.error
    [failed] = records(done, "op.attempt_failed")
    assert failed["attempt"] == 1 and failed["error"]["retryable"] is True
    assert records(done, "op.called")[0]["attempt"] == 2
    assert len(server.refunds_of(pi)) == 1  # one charge back, not two
    keys = [r.header("Idempotency-Key") for r in server.requests_to("POST", "/v1/refunds")]
    assert len(keys) == 2 and keys[0] == keys[1] and keys[0].startswith(done.id + ":")
    assert (done.result or {})["refund"] == server.refunds_of(pi)[0]["id"]


def test_a_500_before_the_refund_is_tried_again_and_refunds_once(engine, server):
    pi = server.pay(4500)
    server.fault(status=500, method="POST", path="/v1/refunds",
                 body={"error": {"type": "api_error", "message": "An unknown error occurred"}})
    done = run(engine, "stripe-refund", {"payment_intent": pi, "amount": 1000})
    assert done.status == RunStatus.FINISHED, done.error
    assert records(done, "op.attempt_failed")[0]["error"]["status"] == 500
    assert len(server.refunds_of(pi)) == 1


def test_a_429_with_retry_after_is_waited_out_durably(engine, server):
    pi = server.pay(4500)
    server.rate_limit(retry_after=30, path="/v1/payment_intents/")
    began = time.monotonic()
    waiting = run(engine, "stripe-refund", {"payment_intent": pi, "amount": 500})
    assert time.monotonic() - began < 5  # no thread slept out the 30 s
    assert (waiting.status, waiting.waiting_for, waiting.lease_owner) == (RunStatus.WAITING, "retry", "")
    [failed] = records(waiting, "op.attempt_failed")
    assert (failed["error"]["status"], failed["error"]["vendor_code"], failed["wait_ms"]) == (429, "rate_limit", 30_000)
    assert waiting.wake_at is not None and clock.to_ms(waiting.wake_at) == failed["next_at"]
    assert not server.refunds_of(pi)
    clock.advance(timedelta(seconds=20))
    drain(engine)
    waiting.refresh_from_db()
    assert waiting.status == RunStatus.WAITING  # not before its time
    clock.advance(timedelta(seconds=11))
    drain(engine)
    waiting.refresh_from_db()
    assert (waiting.status, (waiting.result or {})["amount"]) == (RunStatus.FINISHED, 500), waiting.error
    assert records(waiting, "op.called")[0]["attempt"] == 2
    assert len(server.refunds_of(pi)) == 1


def test_a_5xx_is_not_tried_again_for_an_operation_that_may_not_be(engine, server):
    server.fault(status=503, method="POST", path="/v1/products",
                 body={"error": {"type": "api_error", "message": "try later"}})
    failed = run(engine, "stripe-product")
    assert (failed.status, (failed.error or {})["code"]) == (RunStatus.FAILED, "driver_failed")
    assert "503" in (failed.error or {})["message"]
    assert not records(failed, "op.attempt_failed")
    assert len(server.requests_to("POST", "/v1/products")) == 1


def test_a_final_4xx_is_not_tried_again_and_names_stripes_code(engine, server):
    pi = server.pay(1000)
    failed = run(engine, "stripe-refund", {"payment_intent": pi, "amount": 1500})
    assert (failed.status, (failed.error or {})["code"]) == (RunStatus.FAILED, "driver_failed")
    assert "amount_too_large" in (failed.error or {})["message"]
    assert not records(failed, "op.attempt_failed")
    assert len(server.requests_to("POST", "/v1/refunds")) == 1
    assert not server.refunds_of(pi)


def test_the_example_companys_refund_payment_on_the_real_driver(db, server):
    make_user("alice", perms=["runs.start_workflow"])
    config = resolve_config(SanomaConfig(connectors=[stripe], workflows=[refund_payment]))
    set_config(config)
    try:
        ceiling = "1,000,000.00 is above the ceiling of 999,999.99 that stripe.refund.create declares"
        with pytest.raises(InvalidInput, match=ceiling):
            services.start(workflow="refund-payment", input={"payment_intent": "pi_1", "amount": 100_000_000},
                           started_by="alice", config=config)
        pi = server.pay(4500)
        done = run(config, "refund-payment", {"payment_intent": pi, "amount": 1200})
        assert (done.status, done.result) == (RunStatus.FINISHED, {
            "refund_id": server.refunds_of(pi)[0]["id"], "amount": 1200, "currency": "EUR"}), done.error
        assert list(done.tags.values_list("key", "value")) == [("payment", pi)]
    finally:
        set_config(None)
