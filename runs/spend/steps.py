"""Scenario steps about spend limits, as a config's step set (`SanomaConfig(steps=SPEND_STEPS)`):

    Given shop.order.refund has spent 90000 today          # earlier calls, counted as spent
    Given shop.order.refund has spent 30000 today by alice # ... of runs alice started
    Then shop.order.refund has spent 110000 today          # what the spend table counts now

Amounts in minor units (cents), in the operation's own currency; "today" is the scenario's clock's
UTC day. A seeded amount is one spend row (state `spent`) of no run, as earlier refunds leave.
"""
from __future__ import annotations

from typing import Any

from django.db.models import Sum

from runs.engine import clock
from runs.spend.models import COUNTED, SpendEntry, SpendState
from runs.spend.services import settle
from runs.spend.sums import day_of, month_of


def _operation(world: Any, op_id: str) -> Any:
    op = world.config.ops[op_id]
    if op.effect != "money" or op.money is None:
        raise AssertionError(f"{op_id} is not a money operation naming its amount (op(effect=\"money\", amount=...))")
    return op


def seed(world: Any, op_id: str, cents: int, starter: str = "") -> None:
    op = _operation(world, op_id)
    if getattr(world, "sandbox", False):
        # A sandbox run's fakes are its own, but the spend table is the company's: a seeded amount
        # would count against every real refund's budget today.
        raise AssertionError(f"{op_id}'s spend cannot be seeded in a sandbox run: it would count as the "
                             "company's real spend today")
    now = clock.now()
    number = SpendEntry.objects.filter(run_id__startswith="scenario-seed-").count() + 1
    SpendEntry.objects.create(
        run_id=f"scenario-seed-{number}", seq=0, op=op.id, vendor=op.vendor, workflow="", starter=starter,
        currency=op.money.fixed_currency or "", cents=int(cents), day=day_of(now), month=month_of(now),
        state=SpendState.SPENT, decided_at=now, settled_at=now)


def seed_by(world: Any, op_id: str, cents: int, who: str) -> None:
    seed(world, op_id, cents, who)


def spent_today(world: Any, op_id: str, cents: int) -> None:
    op = _operation(world, op_id)
    currency = op.money.fixed_currency or ""
    settle(currency, now=clock.now())
    found = SpendEntry.objects.filter(op=op.id, currency=currency, day=day_of(clock.now()),
                                      state__in=COUNTED).aggregate(total=Sum("cents"))["total"] or 0
    assert found == cents, f"{op_id} has spent {found} today (counted: reserved and spent), not {cents}"


SPEND_STEPS = [
    ("given", "{op} has spent {int} today", seed),
    ("given", "{op} has spent {int} today by {who}", seed_by),
    ("then", "{op} has spent {int} today", spent_today),
]
