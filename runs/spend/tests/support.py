"""A vendor with money operations for the spend tests, and a company policy with a daily budget."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from connectors import DriverError, define_connector, op, with_setup
from connectors.fakes import define_fake
from runs.authoring import define_workflow
from runs.policies import load_cedar_policy

BUDGET = 100_000  # 1,000.00 EUR a day through pay.order.refund


class RefundIn(BaseModel):
    order_id: str = Field(min_length=1)
    amount_cents: int = Field(gt=0)


class Refunded(BaseModel):
    refund_id: str
    amount_cents: int


class PayoutIn(BaseModel):
    to: str
    cents: int = Field(gt=0)
    currency: str


class PaidOut(BaseModel):
    id: str


vendor = define_connector("pay", {
    "order": {"refund": op(effect="money", input=RefundIn, output=Refunded, amount="amount_cents", currency="EUR",
                           ceiling=1_000_000, summary="Refund {amount_cents:money} on order {order_id}")},
    "payout": {"send": op(effect="money", input=PayoutIn, output=PaidOut, amount="cents", currency="currency")},
})


def _refund(state: dict, i: RefundIn, c: Any) -> dict:
    if i.order_id == "refused":
        raise DriverError("the order cannot be refunded", status=402, vendor_code="card_declined")
    # An order with only half its amount left to refund: the vendor refunds what is left, and says so.
    cents = i.amount_cents // 2 if i.order_id == "half-left" else i.amount_cents
    state["refunds"].append({"order_id": i.order_id, "amount_cents": cents, "key": c.idempotency_key})
    return {"refund_id": f"re_{len(state['refunds'])}", "amount_cents": cents}


def _payout(state: dict, i: PayoutIn, c: Any) -> dict:
    state["payouts"].append({"to": i.to, "cents": i.cents, "currency": i.currency})
    return {"id": f"po_{len(state['payouts'])}"}


def make_fake(file: Any = None) -> Any:
    return define_fake(vendor, initial=lambda: {"refunds": [], "payouts": []},
                       ops={"order": {"refund": _refund}, "payout": {"send": _payout}}, file=file)


pay = with_setup(vendor, fake=make_fake)


class RefundInput(BaseModel):
    order_id: str = "1"
    amount_cents: int


def _refund_run(ctx: Any, input: RefundInput) -> dict:
    done = ctx.pay.order.refund({"order_id": input.order_id, "amount_cents": input.amount_cents})
    return {"refund_id": done.refund_id}


class PayoutInput(BaseModel):
    cents: int
    currency: str = "EUR"


def _payout_run(ctx: Any, input: PayoutInput) -> dict:
    return {"id": ctx.pay.payout.send({"to": "acct", "cents": input.cents, "currency": input.currency}).id}


REFUND = define_workflow(name="refund", input=RefundInput, uses=["pay.order.refund"], run=_refund_run)
PAYOUT = define_workflow(name="payout", input=PayoutInput, uses=["pay.payout.send"], run=_payout_run)

BUDGET_RULES = f"""
@id("all-allowed")
permit(principal, action, resource);

@id("refund-daily-budget")
@approve("group:finance")
@title("Refund over the daily budget")
@budget("{BUDGET}")
forbid(principal, action == Action::"pay.order.refund", resource)
when {{ context.spent.today.operation + context.amount > {BUDGET} }};
"""


def budget_policy(folder: Path, rules: str = BUDGET_RULES) -> Any:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "budget.cedar").write_text(rules)
    return load_cedar_policy(folder)


class Slow:
    """A policy that thinks for `seconds` before deciding: two deciders racing overlap for sure."""

    def __init__(self, policy: Any, seconds: float) -> None:
        self.policy, self.seconds = policy, seconds
        self.version, self.defined = policy.version, policy.defined

    def decide(self, call: Any) -> Any:
        time.sleep(self.seconds)
        return self.policy.decide(call)

    def rule(self, rule_id: str) -> Any:
        return self.policy.rule(rule_id)
