"""What was spent: the sums a policy reads as `context.spent`, from the spend table.

For a call of operation `op` (vendor `vendor`) in workflow `workflow`, started by `starter`, in
`currency`, the sums are of every counted row (reserved or spent) in that currency:

    {"currency": "EUR",
     "today": {"operation": 90000, "vendor": 90000, "workflow": 90000, "total": 120000,
               "by_starter": {"operation": 50000, "vendor": 50000, "workflow": 50000, "total": 50000}},
     "month": {... the same keys, over the UTC month ...}}

`operation`: through this operation; `vendor`: through any operation of its vendor; `workflow`:
by runs of this workflow; `total`: every money call in this currency. `by_starter`: the same, of
runs this starter started. `operations`: through each money operation by name, every one of the
config's listed (`listed`, zero when nothing moved through it), so that one budget can add up
several operations (`context.spent.today.operations["stripe.refund.create"]`). All in minor units;
today and this month are UTC. The call being decided is never in its own sums (`exclude`: its run
and step).
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime
from typing import Any

from django.db.models import Q, Sum

from runs.spend.models import COUNTED, SpendEntry

PERIODS = ("today", "month")
SCOPES = ("operation", "vendor", "workflow", "total")


def day_of(moment: datetime) -> date:
    """The UTC day of `moment`."""
    return moment.astimezone(UTC).date()


def month_of(moment: datetime) -> date:
    """The first day of `moment`'s UTC month."""
    return day_of(moment).replace(day=1)


def empty(currency: str, listed: Iterable[str] = ()) -> dict[str, Any]:
    """The sums when nothing was spent."""
    zero = {scope: 0 for scope in SCOPES}
    return {"currency": currency, **{period: {**zero, "by_starter": dict(zero),
                                               "operations": dict.fromkeys(listed, 0)} for period in PERIODS}}


def spent(*, op: str, vendor: str, workflow: str, starter: str, currency: str, now: datetime,
          exclude: tuple[str, int] | None = None, listed: Iterable[str] = ()) -> dict[str, Any]:
    """The sums of counted rows in `currency` this month and today (see the module), one query.
    `listed`: the money operations `operations` names (this call's always among them)."""
    names = list(dict.fromkeys([op, *listed]))
    today, month = day_of(now), month_of(now)
    rows = SpendEntry.objects.filter(currency=currency, month=month, state__in=COUNTED)
    if exclude is not None:
        rows = rows.exclude(run_id=exclude[0], seq=exclude[1])
    scopes = {"operation": Q(op=op), "vendor": Q(vendor=vendor), "workflow": Q(workflow=workflow), "total": Q()}
    places: dict[str, tuple[str, str, str]] = {}  # alias -> (period, where it goes, its name)
    wanted: dict[str, Sum] = {}
    for period, when in (("today", Q(day=today)), ("month", Q())):
        for scope, where in scopes.items():
            for mine in (False, True):
                alias = f"s{len(wanted)}"
                places[alias] = (period, "by_starter" if mine else "", scope)
                wanted[alias] = Sum("cents", filter=when & where & (Q(starter=starter) if mine else Q()))
        for name in names:
            alias = f"s{len(wanted)}"
            places[alias] = (period, "operations", name)
            wanted[alias] = Sum("cents", filter=when & Q(op=name))
    out = empty(currency, names)
    for alias, value in rows.aggregate(**wanted).items():
        period, part, name = places[alias]
        (out[period][part] if part else out[period])[name] = int(value or 0)
    return out
