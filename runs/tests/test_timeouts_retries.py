"""When vendors misbehave: a call's time limit, retry policies, and long retry waits slept durably.

The vendor is a fake whose `hold` keeps a call hanging until released (as a hung HTTP call does)
and whose faults refuse calls as a vendor would (a retryable 429 with a Retry-After).
"""
from __future__ import annotations

import time
from datetime import timedelta

import pytest
from pydantic import BaseModel

from connectors import Retry, define_connector, op, with_setup
from connectors.fakes import define_fake
from runs.authoring import define_workflow
from runs.engine import clock
from runs.models import RunStatus

# -- a vendor ------------------------------------------------------------------------------------------


class Ref(BaseModel):
    key: str = "k"


class Out(BaseModel):
    n: int


vendor = define_connector("slow", {
    "thing": {
        "read": op(effect="read", input=Ref, output=Out, idempotent=True),
        "patient": op(effect="read", input=Ref, output=Out, idempotent=True, timeout=5,
                      retry=Retry(attempts=5, initial=0.001, factor=2)),
        "pay": op(effect="money", input=Ref, output=Out),
    },
})


def _count(state, i, c):
    state["calls"].append({"key": i.key, "attempt": c.attempt, "timeout": c.timeout,
                           "time_left": c.time_left()})
    return {"n": len(state["calls"])}


def make_fake(file=None):
    return define_fake(vendor, initial=lambda: {"calls": []},
                       ops={"thing": {"read": _count, "patient": _count, "pay": _count}}, file=file)


slow = with_setup(vendor, fake=make_fake)
READ, PATIENT, PAY = (slow.op(f"slow.thing.{name}") for name in ("read", "patient", "pay"))


def read_quickly(ctx, input):
    return {"n": ctx.slow.thing.read({"key": "a"}, timeout=0.3).n}


def pay_quickly(ctx, input):
    return {"n": ctx.slow.thing.pay({"key": "a"}, timeout=0.3).n}


def patient(ctx, input):
    return {"n": ctx.slow.thing.patient({"key": "a"}).n}


def read_once(ctx, input):
    return {"n": ctx.slow.thing.read({"key": "a"}, retry=Retry(attempts=1)).n}


WORKFLOWS = [
    define_workflow(name="read-quickly", uses=[READ], run=read_quickly),
    define_workflow(name="pay-quickly", uses=[PAY], run=pay_quickly),
    define_workflow(name="patient", uses=[PATIENT], run=patient),
    define_workflow(name="read-once", uses=[READ], run=read_once),
    define_workflow(name="read", uses=[READ], run=lambda ctx, input: {"n": ctx.slow.thing.read({}).n}),
]


@pytest.fixture
def engine(engine_for):
    return engine_for(*WORKFLOWS, connectors=[slow])


# -- timeouts ------------------------------------------------------------------------------------------


def test_a_hung_idempotent_call_fails_its_attempt_at_the_timeout_and_the_next_try_succeeds(engine):
    release = engine.config.fakes["slow"].hold("slow.thing.read")
    try:
        run = engine.run("read-quickly")
    finally:
        release()
    assert (run.status, run.result) == (RunStatus.FINISHED, {"n": 1}), run.error
    [failed] = engine.records(run, "op.attempt_failed")
    assert (failed["attempt"], failed["error"]["code"]) == (1, "driver_timeout")
    assert "did not answer within 0.3 s" in failed["error"]["message"]
    [called] = engine.records(run, "op.called")
    assert called["attempt"] == 2


def test_a_hung_call_that_is_not_idempotent_fails_the_run_and_takes_effect_at_most_once(engine):
    fake = engine.config.fakes["slow"]
    release = fake.hold("slow.thing.pay")
    run = engine.run("pay-quickly")
    assert (run.status, run.error["code"]) == (RunStatus.FAILED, "driver_timeout")
    assert "may have taken effect at the vendor" in run.error["message"]
    assert not engine.records(run, "op.attempt_failed")  # tried once
    release()  # the vendor gets to it after all
    deadline = time.monotonic() + 5
    while not fake.state["calls"] and time.monotonic() < deadline:
        time.sleep(0.01)
    engine.drain()
    assert len(fake.state["calls"]) == 1  # once, never again


def test_the_driver_is_told_its_timeout_and_the_time_left(engine):
    run = engine.run("read-quickly")
    [call] = engine.config.fakes["slow"].state["calls"]
    assert run.status == RunStatus.FINISHED
    assert call["timeout"] == 0.3 and 0 < call["time_left"] <= 0.3


# -- retry policies --------------------------------------------------------------------------------------


def test_an_operations_retry_policy_tries_it_as_often_as_it_says(engine):
    fake = engine.config.fakes["slow"]
    for _ in range(4):
        fake.fail_next("slow.thing.patient")
    run = engine.run("patient")
    assert (run.status, run.result) == (RunStatus.FINISHED, {"n": 1})
    assert [r["attempt"] for r in engine.records(run, "op.attempt_failed")] == [1, 2, 3, 4]
    assert engine.records(run, "op.called")[0]["attempt"] == 5


def test_the_sites_default_is_three_tries_and_a_call_may_say_once(engine):
    fake = engine.config.fakes["slow"]
    for _ in range(3):
        fake.fail_next("slow.thing.read")
    run = engine.run("read")
    assert (run.status, run.error["code"]) == (RunStatus.FAILED, "driver_failed")
    assert len(engine.records(run, "op.attempt_failed")) == 2
    fake.fail_next("slow.thing.read")
    once = engine.run("read-once")
    assert once.status == RunStatus.FAILED and not engine.records(once, "op.attempt_failed")


def test_a_429_with_retry_after_waits_durably_then_succeeds(engine):
    engine.config.fakes["slow"].rate_limit("slow.thing.read", retry_after=30)
    began = time.monotonic()
    run = engine.run("read")
    assert time.monotonic() - began < 5  # no thread slept out the 30 s
    assert (run.status, run.waiting_for, run.lease_owner) == (RunStatus.WAITING, "retry", "")
    [failed] = engine.records(run, "op.attempt_failed")
    assert failed["error"]["status"] == 429 and failed["wait_ms"] == 30_000
    assert run.wake_at is not None and clock.to_ms(run.wake_at) == failed["next_at"]
    clock.advance(timedelta(seconds=20))
    engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING  # not before its time
    clock.advance(timedelta(seconds=11))
    engine.drain()
    run.refresh_from_db()
    assert (run.status, run.result) == (RunStatus.FINISHED, {"n": 1})
    assert engine.records(run, "op.called")[0]["attempt"] == 2


# -- bad declarations and calls --------------------------------------------------------------------------


@pytest.mark.parametrize(("make", "says"), [
    (lambda: Retry(attempts=0), "from 1 to 100"),
    (lambda: Retry(factor=0.5), "factor >= 1"),
    (lambda: Retry(initial="1"), "must be a number"),  # type: ignore[arg-type]
    (lambda: op(effect="money", input=Ref, output=Out, retry=Retry(attempts=2)), "idempotent"),
    (lambda: op(effect="read", input=Ref, output=Out, timeout=0), "above 0"),
])
def test_a_bad_retry_or_timeout_declaration_names_what_is_wrong(make, says):
    with pytest.raises((ValueError, TypeError)) as caught:
        make()
    assert says in str(caught.value)


def negative_timeout(ctx, input):
    ctx.slow.thing.read({}, timeout=-1)


def retry_not_a_retry(ctx, input):
    ctx.slow.thing.read({}, retry=3)


def retry_of_a_payment(ctx, input):
    ctx.slow.thing.pay({}, retry=Retry(attempts=3))


@pytest.mark.parametrize(("body", "says"), [
    (negative_timeout, "above 0"),
    (retry_not_a_retry, "must be a Retry"),
    (retry_of_a_payment, "not idempotent"),
])
def test_a_bad_call_option_fails_the_run_before_anything_is_called(engine_for, body, says):
    engine = engine_for(define_workflow(name="bad", uses=[READ, PAY], run=body), connectors=[slow])
    run = engine.run("bad")
    assert (run.status, run.error["code"]) == (RunStatus.FAILED, "invalid_input") and says in run.error["message"]
    assert engine.config.fakes["slow"].state["calls"] == []
