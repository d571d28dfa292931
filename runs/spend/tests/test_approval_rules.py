"""An approval lifts only the hold rules it was asked for: finance signing off on "every refund
needs finance" while the day's budget had room does not let the refund past the budget once other
refunds used it up. On SQLite and PostgreSQL alike."""
from __future__ import annotations

import pytest

from runs.approvals import services as approvals
from runs.models import Approval, LedgerRecord
from runs.spend.models import SpendEntry
from runs.spend.tests.support import BUDGET, BUDGET_RULES, REFUND, budget_policy, pay
from runs.testing import make_user

pytestmark = pytest.mark.django_db

# The example company's two holds for the same approver: every money call, and the budget.
RULES = BUDGET_RULES + """
@id("refunds-need-finance")
@approve("group:finance")
@title("Refund needs finance")
forbid(principal, action in Action::"money", resource);
"""


@pytest.fixture
def engine(engine_for, tmp_path):
    make_user("fin", groups=["finance"])
    return engine_for(REFUND, connectors=[pay], policy=budget_policy(tmp_path / "p", RULES))


def asked(run) -> list[tuple[str, str, list[str], str]]:
    return [(a.approval_id, a.title, a.rules, a.status) for a in Approval.objects.filter(run=run).order_by("seq")]


def approve(engine, run, approval_id: str) -> None:
    approvals.decide(run_id=run.id, decision="approve", by="fin", approval_id=approval_id, timeout=0)
    engine.drain()
    run.refresh_from_db()


def test_finances_sign_off_under_the_budget_does_not_lift_the_budget_once_the_day_is_full(engine):
    first = engine.run("refund", {"amount_cents": 30_000})  # under the budget: only finance's usual hold
    assert first.status == "waiting"
    assert asked(first) == [("approval-1", "Refund needs finance", ["refunds-need-finance"], "pending")]

    other = engine.run("refund", {"amount_cents": 80_000})  # another refund uses the day up meanwhile
    approve(engine, other, "approval-1")
    assert other.status == "finished"

    approve(engine, first, "approval-1")  # finance approves the first: the budget rule now applies
    assert first.status == "waiting"
    assert asked(first) == [
        ("approval-1", "Refund needs finance", ["refunds-need-finance"], "approved"),
        ("approval-2", "Refund over the daily budget", ["refund-daily-budget"], "pending"),
    ]
    [record] = LedgerRecord.objects.filter(run_id=first.id, kind="approval.requested", seq=Approval.objects.get(
        run=first, approval_id="approval-2").seq)
    assert record.body["rules"] == ["refund-daily-budget"] and record.body["approver"] == "group:finance"
    assert not SpendEntry.objects.filter(run_id=first.id).exists()  # held: nothing reserved
    assert len(engine.config.fakes["pay"].state["refunds"]) == 1

    approve(engine, first, "approval-2")  # finance saw the budget hold and lets it through
    assert first.status == "finished"
    assert sum(SpendEntry.objects.filter(state="spent").values_list("cents", flat=True)) == 110_000


def test_a_refund_over_the_budget_from_the_start_is_one_approval_for_both_rules(engine):
    run = engine.run("refund", {"amount_cents": BUDGET + 1})
    assert asked(run) == [("approval-1", "Refund over the daily budget",
                           ["refund-daily-budget", "refunds-need-finance"], "pending")]
    approve(engine, run, "approval-1")
    assert run.status == "finished" and len(asked(run)) == 1


def test_an_approval_that_names_no_rules_lifts_every_hold_of_its_approver(engine):
    """An approval kept before rules were recorded (or asked by `ctx.approval`) keeps its old reach."""
    first = engine.run("refund", {"amount_cents": 30_000})
    Approval.objects.filter(run=first).update(rules=[])
    approve(engine, engine.run("refund", {"amount_cents": 80_000}), "approval-1")
    approve(engine, first, "approval-1")
    assert first.status == "finished" and len(asked(first)) == 1
