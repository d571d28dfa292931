"""Money operations: the amount's field, its currency and its ceiling, checked when declared; the
summary shows money with its currency; a workflow's input field refuses what the ceiling refuses;
resource types' operations say what one call does."""
from __future__ import annotations

import re

import pytest
from pydantic import BaseModel, Field, ValidationError

from company.vendors.shop import shop
from connectors import define_connector, define_resource, op
from connectors.money import format_money
from connectors.operations import summarize


class Pay(BaseModel):
    order_id: str
    amount_cents: int = Field(gt=0)
    currency: str = "EUR"
    note: str = ""


class Paid(BaseModel):
    ok: bool = True


def refund(**kw):
    return op(effect="money", input=Pay, output=Paid, **kw)


@pytest.mark.parametrize(("declared", "says"), [
    ({"effect": "write", "amount": "amount_cents"}, 'amount is for a money operation (effect="money")'),
    ({"amount": "cents"}, "amount='cents' is not an input field of Pay; its fields are order_id, amount_cents"),
    ({"amount": "order_id"}, "amount='order_id' must be an int field"),
    ({"amount": "amount_cents", "ceiling": 0}, "ceiling must be a whole number of minor units (cents) from 1"),
    ({"amount": "amount_cents", "ceiling": True}, "ceiling must be a whole number"),
    ({"amount": "amount_cents", "ceiling": 10.5}, "ceiling must be a whole number"),
    ({"amount": "amount_cents", "ceiling": 2**53}, "from 1 to 2^53 - 1"),
    ({"ceiling": 100}, "currency and ceiling need amount"),
    ({"currency": "EUR"}, "currency and ceiling need amount"),
    ({"amount": "amount_cents", "currency": "euro"}, "is neither an ISO 4217 code"),
    ({"amount": "amount_cents", "currency": "amount_cents"}, "must be a str field holding an ISO 4217 code"),
])
def test_a_money_declaration_that_does_not_fit_its_input_is_refused_when_declared(declared, says):
    effect = declared.pop("effect", "money")
    with pytest.raises(ValueError, match=re.escape(says)):
        op(effect=effect, input=Pay, output=Paid, **declared)


def test_money_reads_as_people_read_it_with_its_currency_when_known():
    assert format_money(123456) == "1,234.56"
    assert format_money(5, "EUR") == "0.05 EUR"
    assert format_money(-120000, "USD") == "-1,200.00 USD"
    fixed = define_connector("pay", {"order": {"refund": refund(
        amount="amount_cents", currency="EUR", summary="Refund {amount_cents:money} on order {order_id}")}})
    operation = fixed.op("pay.order.refund")
    assert summarize(operation, {"order_id": "1002", "amount_cents": 120000}) == "Refund 1,200.00 EUR on order 1002"
    money = operation.money_of({"order_id": "1", "amount_cents": 150})
    assert money is not None and money.as_dict() == {"cents": 150, "currency": "EUR", "shown": "1.50 EUR"}
    by_field = define_connector("pay", {"order": {"refund": refund(
        amount="amount_cents", currency="currency", summary="Refund {amount_cents:money}")}}).op("pay.order.refund")
    assert summarize(by_field, {"amount_cents": 100, "currency": "USD"}) == "Refund 1.00 USD"
    assert summarize(by_field, {"amount_cents": 100, "currency": "dollars"}) == "Refund 1.00"  # not a code: unknown
    plain = define_connector("pay", {"order": {"refund": refund(summary="Refund {amount_cents:money}")}})
    assert summarize(plain.op("pay.order.refund"), {"amount_cents": 100}) == "Refund 1.00"
    assert plain.op("pay.order.refund").money_of({"amount_cents": 100}) is None  # no amount declared


def test_a_call_above_the_ceiling_is_an_issue_at_the_amounts_path():
    operation = define_connector("pay", {"order": {"refund": refund(
        amount="amount_cents", currency="EUR", ceiling=1_000_000)}}).op("pay.order.refund")
    assert operation.ceiling_issues({"order_id": "1", "amount_cents": 1_000_000}) == []
    assert operation.ceiling_issues({"order_id": "1", "amount_cents": 9 * 10**15}) == [{
        "path": ["amount_cents"], "code": "above_ceiling",
        "message": "90,000,000,000,000.00 EUR is above the ceiling of 10,000.00 EUR that pay.order.refund declares"}]


def test_a_workflows_amount_field_refuses_what_the_ceiling_refuses_and_shows_it_in_its_schema():
    operation = shop.op("shop.order.refund")

    class RefundInput(BaseModel):
        amount_cents: int = operation.amount_field(gt=0)

    assert RefundInput(amount_cents=1_000_000).amount_cents == operation.ceiling == 1_000_000
    with pytest.raises(ValidationError) as caught:
        RefundInput(amount_cents=9 * 10**15)
    [error] = caught.value.errors()
    assert (error["type"], error["loc"]) == ("above_ceiling", ("amount_cents",))
    assert error["msg"] == ("90,000,000,000,000.00 EUR is above the ceiling of 10,000.00 EUR that shop.order.refund "
                            "declares")
    with pytest.raises(ValidationError, match="greater than 0"):
        RefundInput(amount_cents=0)  # the field's own rule still holds
    schema = RefundInput.model_json_schema()["properties"]["amount_cents"]
    assert schema["maximum"] == 1_000_000 and "at most 10,000.00 EUR" in schema["description"]
    with pytest.raises(ValueError, match="declares no amount"):
        shop.op("shop.customer.notify").amount_field()


def test_every_operation_of_the_example_shop_a_policy_can_hold_says_what_one_call_does():
    """The example company's policies hold money and access, and may deny or permit any call: each
    operation of its shop, its resource types' included, has a summary built from its input."""
    missing = [o.id for o in shop.operations.values() if not o.summary]
    assert missing == []
    said = {
        "shop.order.refund": ({"order_id": "1002", "amount_cents": 120000}, "Refund 1,200.00 EUR on order 1002"),
        "shop.staff.grant": ({"username": "alice", "role": "finance"},
                             "Give alice the role finance in the shop admin"),
        "shop.staff_role.create": ({"desired": {"user": "alice", "role": "finance"}},
                                   "Create a Staff role: user alice, role finance"),
        "shop.staff_role.delete": ({"id": "alice:finance"}, "Delete the Staff role alice:finance"),
        "shop.product.update": ({"id": "mug", "changes": {}, "desired": {}}, "Change the Product mug"),
    }
    for op_id, (given, expected) in said.items():
        assert summarize(shop.op(op_id), given) == expected, op_id
    refund_op = shop.op("shop.order.refund")
    assert (refund_op.amount, refund_op.ceiling) == ("amount_cents", 1_000_000)


def test_a_summary_may_read_into_an_object_field_it_names():
    class Wrap(BaseModel):
        desired: dict

    assert summarize(define_connector("v", {"r": {"make": op(effect="write", input=Wrap, output=Paid,
                                                                  summary="Make {desired.name}")}}).op("v.r.make"),
                     {"desired": {"name": "x"}}) == "Make x"
    with pytest.raises(ValueError, match=r"names \{wanted.name\}, which is not an input field"):
        op(effect="write", input=Wrap, output=Paid, summary="Make {wanted.name}")
    thing = define_resource(type="thing", title="Thing", identity="name",
                            schema=type("ThingFields", (BaseModel,), {"__annotations__": {"name": str}}),
                            find=lambda d: d["name"])
    made = define_connector("v", {}, types=[thing])
    assert summarize(made.op("v.thing.create"), {"desired": {"name": "spoon"}}) == "Create a Thing: name spoon"
