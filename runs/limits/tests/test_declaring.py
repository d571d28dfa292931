"""Declaring a limit: parsed and checked when the connector or the operation is declared."""
from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from connectors import define_connector, op
from connectors.limits import SPACING_MARGIN, Limit, parse_rate


class Refund(BaseModel):
    account: str
    amount_cents: int


class Status(BaseModel):
    id: str


class Done(BaseModel):
    ok: bool = True


@pytest.mark.parametrize(("text", "calls", "period", "shown"), [
    ("10/s", 10, 1.0, "10/s"), ("600/min", 600, 60.0, "600/min"), ("1000 / hour", 1000, 3600.0, "1000/h"),
    ("20000/day", 20000, 86400.0, "20000/day"), ("5/second", 5, 1.0, "5/s"), ("3/H", 3, 3600.0, "3/h"),
])
def test_a_rate_is_calls_per_unit(text, calls, period, shown):
    rate = parse_rate(text)
    assert (rate.calls, rate.period, str(rate)) == (calls, period, shown)
    assert rate.interval == pytest.approx(period / calls * (1 + SPACING_MARGIN))


@pytest.mark.parametrize(("value", "says"), [
    ("10/x", "unit 'x' must be one of s, min, h, day"),
    ("10 per second", "must be <calls>/<unit>"),
    ("0/s", "from 1 to 1,000,000"),
    ("-1/s", "must be <calls>/<unit>"),
    (10, "must be text such as '10/s'"),
    ("2.5/s", "must be <calls>/<unit>"),
])
def test_a_bad_rate_names_what_is_wrong(value, says):
    with pytest.raises(ValueError) as caught:
        parse_rate(value)
    assert says in str(caught.value)


@pytest.mark.parametrize(("kwargs", "says"), [
    ({}, "needs a rate ('10/s'), a concurrency (4), or both"),
    ({"rate": "5/fortnight"}, "Limit rate '5/fortnight': unit 'fortnight' must be one of s, min, h, day"),
    ({"concurrency": 0}, "Limit concurrency must be a whole number of calls at once from 1"),
    ({"concurrency": True}, "Limit concurrency must be a whole number"),
    ({"concurrency": 2.5}, "Limit concurrency must be a whole number"),
    ({"rate": "5/s", "key": "the account"}, "Limit key must name an input field"),
])
def test_a_bad_limit_names_what_is_wrong(kwargs, says):
    with pytest.raises(ValueError) as caught:
        Limit(**kwargs)
    assert says in str(caught.value)


def test_an_operations_key_must_be_a_field_of_its_input():
    with pytest.raises(ValueError) as caught:
        op(effect="money", input=Refund, output=Done, limit=Limit(rate="5/s", key="tenant"))
    assert str(caught.value) == ("op: limit key 'tenant' is not a field of the input (Refund); its fields are "
                                 "account, amount_cents")


def test_a_limit_must_be_a_limit():
    with pytest.raises(TypeError, match=r"limit must be a Limit\(rate=..., concurrency=..., key=...\)"):
        op(effect="read", input=Status, output=Done, limit="5/s")  # type: ignore[arg-type]


def test_a_connectors_key_must_be_a_field_of_one_of_its_operations_inputs():
    ops: dict[str, dict[str, Any]] = {"refund": {"create": op(effect="money", input=Refund, output=Done)},
           "status": {"get": op(effect="read", input=Status, output=Done, idempotent=True)}}
    with pytest.raises(ValueError) as caught:
        define_connector("pay", ops, limit=Limit(rate="5/s", key="tenant"))
    assert "connector pay: limit key 'tenant' is not a field of the input (Refund, Status)" in str(caught.value)
    made = define_connector("pay", ops, limit=Limit(rate="5/s", key="account"))  # Refund has it, Status not
    assert made.limit is not None and made.limit.key == "account"


def test_every_operation_knows_its_connectors_limit_and_its_own():
    own = Limit(rate="2/s", concurrency=1, key="account")
    shared = Limit(rate="25/s", concurrency=4)
    pay = define_connector("pay", {
        "refund": {"create": op(effect="money", input=Refund, output=Done, limit=own)},
        "status": {"get": op(effect="read", input=Status, output=Done, idempotent=True)},
    }, limit=shared)
    create, get = pay.op("pay.refund.create"), pay.op("pay.status.get")
    assert (create.limit, create.vendor_limit) == (own, shared)
    assert (get.limit, get.vendor_limit) == (None, shared)
    assert own.describe() == "2/s, 1 at once, per account"
    assert own.key_value({"account": "acct_1", "amount_cents": 5}) == "acct_1"
    assert shared.key_value({"account": "acct_1"}) == ""
