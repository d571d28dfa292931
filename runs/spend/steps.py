"""Scenario steps about spend limits, as a config's step set (`SanomaConfig(steps=SPEND_STEPS)`):

    Given shop.order.refund has spent 90000 today              # earlier calls, counted as spent
    Given shop.order.refund has spent 30000 today by alice     # ... of runs alice started
    Given stripe.refund.create has spent 90000 EUR today       # an operation whose input names its currency
    When shop.order.refund spends 20000 more today, then "Refund needs finance" is approved by finance-lead
    Then shop.order.refund has spent 110000 today              # what the spend table counts now
    Then stripe.refund.create has spent 20000 EUR today

Amounts in minor units (cents), in the operation's own currency (or the one named, for an
operation whose input field says it); "today" is the scenario's clock's UTC day. A seeded amount
is one spend row (state `spent`) of no run, as earlier refunds leave. The When step is the day's
other refunds made while the run waits for an approval, then that approval decided: the run goes on
with what they spent.
"""
from __future__ import annotations

from typing import Any

from django.db.models import Sum

from connectors.errors import SanomaError
from runs.approvals import services as approvals
from runs.approvals.selectors import approvals_of
from runs.engine import clock
from runs.spend.models import COUNTED, SpendEntry, SpendState
from runs.spend.services import settle
from runs.spend.sums import day_of, month_of


def _operation(world: Any, op_id: str) -> Any:
    op = world.config.ops[op_id]
    if op.effect != "money" or op.money is None:
        raise AssertionError(f"{op_id} is not a money operation naming its amount (op(effect=\"money\", amount=...))")
    return op


def _currency(op: Any, named: str | None) -> str:
    """The currency the step counts in: the operation's own, or the one the step names."""
    fixed = op.money.fixed_currency
    if named is None:
        if fixed is None:
            raise AssertionError(f"{op.id} takes its currency from its input's {op.money.currency!r} field: say "
                                 f"which, as in `{op.id} has spent 90000 EUR today`")
        return fixed
    code = named.upper()
    if len(code) != 3 or not code.isalpha():
        raise AssertionError(f"{named!r} is not a currency: name its ISO 4217 code, such as EUR")
    if fixed is not None and code != fixed:
        raise AssertionError(f"{op.id} moves {fixed} only, not {code}")
    return code


def _sandbox_refusal(op_id: str, *_: Any) -> str:
    """Why a seed of spend refuses a sandbox run: its fakes are its own, but the spend table is the
    company's, so a seeded amount would count against every real refund's budget today. Said up
    front (`features.library.sandbox.sandbox_problem` reads it off the step's function)."""
    return f"the spend it seeds would count as the company's real {op_id} spend today"


def seed(world: Any, op_id: str, cents: int, starter: str = "", currency: str | None = None) -> None:
    op = _operation(world, op_id)
    code = _currency(op, currency)
    if getattr(world, "sandbox", False):
        raise AssertionError(f"{op_id}'s spend cannot be seeded in a sandbox run: {_sandbox_refusal(op_id)}")
    now = clock.now()
    number = SpendEntry.objects.filter(run_id__startswith="scenario-seed-").count() + 1
    SpendEntry.objects.create(
        run_id=f"scenario-seed-{number}", seq=0, op=op.id, vendor=op.vendor, workflow="", starter=starter,
        currency=code, cents=int(cents), day=day_of(now), month=month_of(now),
        state=SpendState.SPENT, decided_at=now, settled_at=now)


def seed_by(world: Any, op_id: str, cents: int, who: str) -> None:
    seed(world, op_id, cents, who)


def seed_in(world: Any, op_id: str, cents: int, currency: str) -> None:
    seed(world, op_id, cents, currency=currency)


def spends_then_approved(world: Any, op_id: str, cents: int, title: str, who: str) -> None:
    """Other runs spend `cents` through `op_id` while the run waits; then `who` approves the
    approval titled `title` (or with that id), and the run is driven on."""
    run = world.run
    if run is None:
        raise AssertionError("there is no run yet: the step that runs the workflow (When ... runs) comes first")
    asked = [a for a in approvals_of(run_id=run.id) if a["status"] == "pending"]
    approval = next((a for a in asked if title in (a["title"], a["id"])), None)
    if approval is None:
        waits = "; ".join(f'"{a["title"]}" ({a["id"]})' for a in asked) or "no approval"
        raise AssertionError(f'the run does not wait for "{title}": it waits for {waits}')
    seed(world, op_id, cents)
    try:
        approvals.decide(run_id=run.id, decision="approve", by=who, approval_id=approval["id"], timeout=0)
    except SanomaError as err:
        raise AssertionError(f'"{title}" could not be approved by {who}: {err}') from None
    if world.driver is not None:
        world.driver.advance()


def _spent_today(world: Any, op_id: str, cents: int, currency: str | None) -> None:
    op = _operation(world, op_id)
    code = _currency(op, currency)
    settle(code, now=clock.now(), ops=world.config.ops)
    found = SpendEntry.objects.filter(op=op.id, currency=code, day=day_of(clock.now()),
                                      state__in=COUNTED).aggregate(total=Sum("cents"))["total"] or 0
    assert found == cents, f"{op_id} has spent {found} {code} today (counted: reserved and spent), not {cents}"


def spent_today(world: Any, op_id: str, cents: int) -> None:
    _spent_today(world, op_id, cents, None)


def spent_today_in(world: Any, op_id: str, cents: int, currency: str) -> None:
    _spent_today(world, op_id, cents, currency)


for _seeds in (seed, seed_by, seed_in):
    _seeds.sandbox_refusal = _sandbox_refusal  # type: ignore[union-attr]  # read by features.library.sandbox

SPEND_STEPS = [
    ("given", "{op} has spent {int} today", seed),
    ("given", "{op} has spent {int} today by {who}", seed_by),
    ("given", "{op} has spent {int} {word} today", seed_in),
    ("when", "{op} spends {int} more today, then {string} is approved by {who}", spends_then_approved),
    ("then", "{op} has spent {int} today", spent_today),
    ("then", "{op} has spent {int} {word} today", spent_today_in),
]
