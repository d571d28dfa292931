"""Spend limits on the engine: what a policy sees (`context.spent`, `context.amount`), the rows a
money call leaves, the budget rule holding the refund that would pass it, and the table checked
against the ledger. On SQLite and PostgreSQL alike."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from runs.approvals import services as approvals
from runs.engine import clock
from runs.models import Approval, LedgerRecord, Run
from runs.policies import allow, approve, define_policy
from runs.policies.cedar.request import cedar_request
from runs.retention import services as retention
from runs.retention.services import Rules
from runs.spend import ledger_check
from runs.spend.models import SpendEntry
from runs.spend.risk import sentence
from runs.spend.tests.support import BUDGET, PAYOUT, REFUND, budget_policy, pay
from runs.testing import make_user
from runs.tests.test_retention import as_owner

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(db):
    make_user("bob", perms=["runs.start_workflow"])
    make_user("fin", groups=["finance"])


def states() -> list[tuple[str, int, str]]:
    return [(r.op, r.cents, r.state) for r in SpendEntry.objects.order_by("decided_at", "id")]


def test_the_policy_sees_the_amount_and_what_was_spent_today_and_this_month(engine_for, people):
    seen: list[Any] = []

    def record(call):
        if call.effect == "money":
            seen.append((call.money, call.spent))
        return allow()

    engine = engine_for(REFUND, PAYOUT, connectors=[pay], policy=define_policy(record, version="v1"))
    while not 5 <= clock.now().day <= 25:  # far from a month's edge: yesterday is this month too
        clock.advance(timedelta(days=1))
    engine.run("refund", {"amount_cents": 200}, by="bob")  # yesterday, this month
    clock.advance(timedelta(days=1))
    engine.run("refund", {"amount_cents": 1000}, by="alice")
    engine.run("payout", {"cents": 30}, by="alice")  # same vendor, another operation and workflow
    engine.run("payout", {"cents": 7, "currency": "USD"}, by="alice")  # another currency: its own sums
    engine.run("refund", {"amount_cents": 5}, by="alice")
    money, spent = seen[-1]
    assert money == {"cents": 5, "currency": "EUR"}
    assert spent == {
        "currency": "EUR",
        "today": {"operation": 1000, "vendor": 1030, "workflow": 1000, "total": 1030,
                  "by_starter": {"operation": 1000, "vendor": 1030, "workflow": 1000, "total": 1030},
                  "operations": {"pay.order.refund": 1000, "pay.payout.send": 30}},
        "month": {"operation": 1200, "vendor": 1230, "workflow": 1200, "total": 1230,
                  "by_starter": {"operation": 1000, "vendor": 1030, "workflow": 1000, "total": 1030},
                  "operations": {"pay.order.refund": 1200, "pay.payout.send": 30}},
    }
    assert seen[3][0] == {"cents": 7, "currency": "USD"} and seen[3][1]["month"]["total"] == 0
    assert states() == [("pay.order.refund", 200, "spent"), ("pay.order.refund", 1000, "spent"),
                        ("pay.payout.send", 30, "spent"), ("pay.payout.send", 7, "spent"),
                        ("pay.order.refund", 5, "spent")]
    # Each row was settled in the transaction that recorded its call.


def test_the_cedar_context_has_the_amount_currency_and_spent_sums(engine_for, people, tmp_path):
    seen: list[Any] = []
    cedar = budget_policy(tmp_path / "p")

    def record(call):
        seen.append(cedar_request(call)[0]["context"])
        return cedar.decide(call)

    engine = engine_for(REFUND, connectors=[pay], policy=define_policy(record, version="v1"))
    engine.run("refund", {"amount_cents": 300})
    context = seen[-1]
    assert context["amount"] == 300 and context["currency"] == "EUR" and context["effect"] == "money"
    assert context["spent"]["today"]["operation"] == 0
    assert context["spent"]["month"]["by_starter"]["total"] == 0


def test_the_refund_that_would_pass_the_budget_is_held_and_the_ones_under_it_pass(engine_for, people, tmp_path):
    engine = engine_for(REFUND, connectors=[pay], policy=budget_policy(tmp_path / "p"))
    first = engine.run("refund", {"amount_cents": 60_000})
    second = engine.run("refund", {"amount_cents": 40_000})  # exactly the budget: not past it
    third = engine.run("refund", {"amount_cents": 1})
    assert (first.status, second.status, third.status) == ("finished", "finished", "waiting")
    [held] = Approval.objects.filter(run=third)
    assert held.title == "Refund over the daily budget" and held.approver == "group:finance"
    assert held.details is not None
    money = held.details["money"]
    assert money["shown"] == "0.01 EUR" and money["spent"]["cents"] == BUDGET
    assert money["budget"] == {"cents": BUDGET, "shown": "1,000.00 EUR"}
    assert sentence(money) == ("0.01 EUR at risk; 1,000.00 EUR spent today through pay.order.refund, "
                               "of a 1,000.00 EUR budget")
    from runs.approvals.selectors import approval_state

    assert approval_state(held)["details"]["money"] == money  # as /api/approvals answers it
    assert not SpendEntry.objects.filter(run_id=third.id).exists()  # a held call reserves nothing
    assert len(engine.config.fakes["pay"].state["refunds"]) == 2

    approvals.decide(run_id=third.id, decision="approve", by="fin", timeout=0)
    engine.drain()
    third.refresh_from_db()
    assert third.status == "finished"
    assert sum(r.cents for r in SpendEntry.objects.filter(state__in=("reserved", "spent"))) == BUDGET + 1

    clock.advance(timedelta(days=1))  # a new day: the budget is whole again
    assert engine.run("refund", {"amount_cents": 90_000}).status == "finished"


def test_a_rejected_refund_spends_nothing_and_a_refused_one_is_released(engine_for, people, tmp_path):
    engine = engine_for(REFUND, connectors=[pay], policy=budget_policy(tmp_path / "p"))
    big = engine.run("refund", {"amount_cents": BUDGET + 1})
    approvals.decide(run_id=big.id, decision="reject", by="fin", timeout=0)
    engine.drain()
    big.refresh_from_db()
    assert big.status == "failed" and not SpendEntry.objects.exists()

    refused = engine.run("refund", {"order_id": "refused", "amount_cents": 90_000})  # the vendor says 402
    assert refused.status == "failed"
    assert engine.run("refund", {"amount_cents": 90_000}).status == "finished"  # the refused one was released
    assert states() == [("pay.order.refund", 90_000, "released"), ("pay.order.refund", 90_000, "spent")]


def test_a_lost_reply_stays_counted_the_money_may_have_moved(engine_for, people, tmp_path):
    engine = engine_for(REFUND, connectors=[pay], policy=budget_policy(tmp_path / "p"))
    engine.config.fakes["pay"].lose_reply("pay.order.refund")
    lost = engine.run("refund", {"amount_cents": 90_000})
    assert lost.status == "failed" and len(engine.config.fakes["pay"].state["refunds"]) == 1
    assert engine.run("refund", {"amount_cents": 20_000}).status == "waiting"
    assert states() == [("pay.order.refund", 90_000, "spent")]


def test_a_python_policy_reads_the_same_sums(engine_for, people):
    def budget(call):
        if call.money and call.spent["today"]["by_starter"]["operation"] + call.money["cents"] > 500:
            return approve("group:finance", title="alice's budget")
        return allow()

    engine = engine_for(REFUND, connectors=[pay], policy=define_policy(budget, version="v1"))
    assert engine.run("refund", {"amount_cents": 500}).status == "finished"
    assert engine.run("refund", {"amount_cents": 100}, by="bob").status == "finished"  # bob's own sum
    assert engine.run("refund", {"amount_cents": 1}).status == "waiting"


def test_the_decisions_kept_by_a_cedar_policy_follow_the_spent_sums(engine_for, people, tmp_path):
    """The same call with the same input, decided twice: the kept decision must not be reused once
    the day's sums changed."""
    policy = budget_policy(tmp_path / "p")
    engine = engine_for(REFUND, connectors=[pay], policy=policy)
    assert engine.run("refund", {"amount_cents": 50_000}).status == "finished"
    assert engine.run("refund", {"amount_cents": 50_000}).status == "finished"
    assert engine.run("refund", {"amount_cents": 50_000}).status == "waiting"


def test_a_budget_annotation_must_be_a_whole_number_on_a_forbid(tmp_path):
    from connectors.errors import ConfigError

    with pytest.raises(ConfigError, match="@budget names the budget a forbid enforces"):
        budget_policy(tmp_path / "p", '@budget("1,000") forbid(principal, action, resource);')


def test_the_table_is_checked_against_the_ledger_and_rebuilt_from_it(engine_for, people, tmp_path, capsys):
    engine = engine_for(REFUND, connectors=[pay], policy=budget_policy(tmp_path / "p"))
    done = [engine.run("refund", {"amount_cents": cents}) for cents in (100, 200, 300)]
    engine.run("refund", {"amount_cents": 400})
    report = ledger_check.check(ops=engine.config.ops)
    assert report.calls == 4 and report.differences == []

    SpendEntry.objects.filter(run_id=done[0].id).delete()
    SpendEntry.objects.filter(run_id=done[1].id).update(cents=999)
    report = ledger_check.check(ops=engine.config.ops)
    assert sorted((d.run_id, d.what) for d in report.differences) == sorted(
        [(done[0].id, "missing"), (done[1].id, "differs")])
    with pytest.raises(CommandError, match="2 difference"):
        call_command("spend", "check")
    call_command("spend", "rebuild")
    assert "rebuilt: 2 row(s)" in capsys.readouterr().out
    call_command("spend", "check")
    assert "agrees with the ledger" in capsys.readouterr().out
    assert sorted(r.cents for r in SpendEntry.objects.all()) == [100, 200, 300, 400]
    with pytest.raises(CommandError, match="--month must be a month as YYYY-MM"):
        call_command("spend", "check", "--month", "2026-13")


@pytest.mark.django_db(transaction=True)
def test_retention_removing_a_run_leaves_the_months_sums_whole(engine_for, people, tmp_path):
    engine = engine_for(REFUND, connectors=[pay], policy=budget_policy(tmp_path / "p"))
    gone = engine.run("refund", {"amount_cents": 90_000})
    assert gone.status == "finished"
    Run.objects.filter(pk=gone.id).update(ended_at=clock.now() - timedelta(days=2))
    with as_owner():
        done = retention.run_retention(rules=Rules.of(None, default=timedelta(days=1)), folder=tmp_path / "r")
    assert done.runs == 1 and not Run.objects.filter(pk=gone.id).exists()
    assert not LedgerRecord.objects.filter(run_id=gone.id).exists()
    assert engine.run("refund", {"amount_cents": 20_000}).status == "waiting"  # 900.00 still counted today
    report = ledger_check.check(ops=engine.config.ops)
    assert (report.kept, report.differences) == (1, [])


def test_a_reservation_of_a_run_that_ended_without_the_call_is_released(engine_for, people, tmp_path):
    """A worker died between the decision and the call, and the run was cancelled before another
    took it over: the money never moved, and the next decision frees the budget."""
    from runs import services
    from runs.engine.advance import advance

    engine = engine_for(REFUND, connectors=[pay], policy=budget_policy(tmp_path / "p"))
    stranded = engine.start("refund", {"amount_cents": 90_000})
    now = clock.now()
    SpendEntry.objects.create(run_id=stranded.id, seq=1, op="pay.order.refund", vendor="pay", workflow="refund",
                              starter="alice", currency="EUR", cents=90_000, day=now.date(), month=now.date().replace(
                                  day=1), decided_at=now)
    def refund_alone(cents: int) -> str:
        run = engine.start("refund", {"amount_cents": cents})
        advance(run.id, worker_id="w", config=engine.config)
        return Run.objects.get(pk=run.id).status

    assert refund_alone(20_000) == "waiting"  # the stranded one counts while its run may still make it
    services.cancel(run_id=stranded.id, by="alice", reason="the worker died")
    assert refund_alone(20_000) == "finished"
    assert SpendEntry.objects.get(run_id=stranded.id).state == "released"


def test_a_currency_field_in_small_letters_counts_with_its_capitals(engine_for, people):
    """Stripe spells currencies `eur`: its calls count with the others in EUR."""
    seen = []

    def record(call):
        seen.append((call.money, call.spent and call.spent["today"]["vendor"]))
        return allow()

    engine = engine_for(REFUND, PAYOUT, connectors=[pay], policy=define_policy(record, version="v1"))
    engine.run("payout", {"cents": 40, "currency": "eur"})
    engine.run("refund", {"amount_cents": 2})
    assert seen == [({"cents": 40, "currency": "EUR"}, 0), ({"cents": 2, "currency": "EUR"}, 40)]


TWO_OPERATIONS = f"""
@id("all-allowed")
permit(principal, action, resource);

@id("money-out-budget")
@approve("group:finance")
@title("Over the day's money out")
@budget("{BUDGET}")
forbid(principal, action in [Action::"pay.order.refund", Action::"pay.payout.send"], resource)
when {{ context.currency == "EUR" &&
        context.spent.today.operations["pay.order.refund"] + context.spent.today.operations["pay.payout.send"]
        + context.amount > {BUDGET} }};
"""


def test_one_budget_adds_up_what_several_operations_moved(engine_for, people, tmp_path):
    """`context.spent.today.operations` names every money operation of the config, zero when
    nothing moved through it: a rule adds up the ones its budget covers."""
    engine = engine_for(REFUND, PAYOUT, connectors=[pay], policy=budget_policy(tmp_path / "p", TWO_OPERATIONS))
    assert engine.run("payout", {"cents": 70_000}).status == "finished"  # nothing refunded yet: zero, not missing
    assert engine.run("payout", {"cents": 900, "currency": "USD"}).status == "finished"  # not euros
    assert engine.run("refund", {"amount_cents": 30_000}).status == "finished"  # exactly the budget
    held = engine.run("payout", {"cents": 1})
    assert held.status == "waiting"
    [approval] = Approval.objects.filter(run=held)
    assert approval.title == "Over the day's money out" and approval.details is not None
    assert sentence(approval.details["money"]) == (
        "0.01 EUR at risk; 1,000.00 EUR spent today through pay.order.refund and pay.payout.send, "
        "of a 1,000.00 EUR budget")
    assert approval.details["money"]["spent"]["operations"] == ["pay.order.refund", "pay.payout.send"]
