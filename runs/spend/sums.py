"""What was spent: the sums a policy reads as `context.spent`, from the spend table.

For a call of operation `op` (vendor `vendor`) in workflow `workflow`, started by `starter`, in
`currency`, the sums are of every counted row (reserved or spent) in that currency:

    {"currency": "EUR",
     "today": {"operation": 90000, "vendor": 90000, "workflow": 90000, "total": 120000,
               "by_starter": {"operation": 50000, "vendor": 50000, "workflow": 50000, "total": 50000}},
     "month": {... the same keys, over the UTC month ...}}

`operation`: through this operation; `vendor`: through any operation of its vendor; `workflow`:
by runs of this workflow; `total`: every money call in this currency. `by_starter`: the same, of
runs this starter started. All in minor units; today and this month are UTC. The call being
decided is never in its own sums (`exclude`: its run and step).
"""
from __future__ import annotations

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


def empty(currency: str) -> dict[str, Any]:
    """The sums when nothing was spent."""
    zero = {scope: 0 for scope in SCOPES}
    return {"currency": currency, **{period: {**zero, "by_starter": dict(zero)} for period in PERIODS}}


def spent(*, op: str, vendor: str, workflow: str, starter: str, currency: str, now: datetime,
          exclude: tuple[str, int] | None = None) -> dict[str, Any]:
    """The sums of counted rows in `currency` this month and today (see the module), one query."""
    today, month = day_of(now), month_of(now)
    rows = SpendEntry.objects.filter(currency=currency, month=month, state__in=COUNTED)
    if exclude is not None:
        rows = rows.exclude(run_id=exclude[0], seq=exclude[1])
    scopes = {"operation": Q(op=op), "vendor": Q(vendor=vendor), "workflow": Q(workflow=workflow), "total": Q()}
    places: dict[str, tuple[str, bool, str]] = {}  # alias -> (period, by the starter, scope)
    wanted: dict[str, Sum] = {}
    for period, when in (("today", Q(day=today)), ("month", Q())):
        for scope, where in scopes.items():
            for mine in (False, True):
                alias = f"s{len(wanted)}"
                places[alias] = (period, mine, scope)
                wanted[alias] = Sum("cents", filter=when & where & (Q(starter=starter) if mine else Q()))
    out = empty(currency)
    for alias, value in rows.aggregate(**wanted).items():
        period, mine, scope = places[alias]
        (out[period]["by_starter"] if mine else out[period])[scope] = int(value or 0)
    return out
