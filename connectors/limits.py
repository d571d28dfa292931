"""How fast and how many at once a vendor may be called: a rate, a concurrency and a key.

    define_connector("stripe", Stripe, limit=Limit(rate="25/s", concurrency=4))
    op(effect="money", input=RefundRequest, output=Refund,
       limit=Limit(rate="5/s", concurrency=2, key="account"))

A connector's limit is one budget shared by all its operations; an operation's own limit is a
budget of its own, and a call must fit both. `rate` is `<calls>/<unit>` (`"10/s"`, `"600/min"`,
`"1000/h"`, `"20000/day"`); `concurrency` is how many calls may be under way at once; `key`
names an input field (the account, the tenant): each value of it has its own budget, so one
customer's burst does not starve the others. A connector's key must be a field of at least one of
its operations' inputs; a call of an operation without that field counts against the budget of no
key value (the empty one).

Calls are spaced evenly, `1/rate` apart and a little wider (`SPACING_MARGIN`), so a vendor counting
its calls by the second never sees one too many when the network delays a call slightly.

The limits are enforced across every worker through the database (`runs.limits`); an operator
may change them while the site runs (`manage.py limits set`). Each is checked when it is declared.
Plain Python: importable without Django.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

UNITS = {"s": 1.0, "sec": 1.0, "second": 1.0, "min": 60.0, "minute": 60.0, "h": 3600.0, "hour": 3600.0,
         "d": 86400.0, "day": 86400.0}
_RATE = re.compile(r"^\s*(\d+)\s*/\s*([a-z]+)\s*$")
MAX_CALLS = 1_000_000  # per unit: a rate above this is no limit at all
MAX_CONCURRENCY = 10_000
SPACING_MARGIN = 0.07  # calls are spaced 7 % wider than 1/rate
RATE_EXAMPLES = "'5/s', '600/min', '1000/h' or '20000/day'"


class LimitError(ValueError, TypeError):
    """A limit declared wrong: the message says what is wrong, `hint` how to write it right (the
    system check shows both). A ValueError (and, for a `limit=` that is no Limit, a TypeError)."""

    def __init__(self, message: str, *, hint: str) -> None:
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True)
class Rate:
    """`calls` per `period` seconds, as declared (`text`)."""

    calls: int
    period: float
    text: str

    @property
    def interval(self) -> float:
        """Seconds between two calls' starts, with the margin."""
        return self.period / self.calls * (1 + SPACING_MARGIN)

    @property
    def per_second(self) -> float:
        return self.calls / self.period

    def __str__(self) -> str:
        return self.text


def parse_rate(value: Any, *, what: str = "rate") -> Rate:
    """`"10/s"` as a `Rate`, or a `LimitError` naming what is wrong (and how to write it right)."""
    if isinstance(value, Rate):
        return value
    write = f"Write the rate as <calls>/<unit>, such as {RATE_EXAMPLES}"
    if not isinstance(value, str):
        raise LimitError(f"{what} must be text such as '10/s' or '600/min'; got {value!r}",
                         hint=f"Quote it: rate=\"10/s\". {write}.")
    found = _RATE.match(value.lower())
    if found is None:
        raise LimitError(f"{what} {value!r} must be <calls>/<unit>, such as '10/s' or '600/min'",
                         hint=f"{write}: a whole number of calls, a slash, a unit.")
    calls, unit = int(found.group(1)), found.group(2)
    if unit not in UNITS:
        raise LimitError(f"{what} {value!r}: unit {unit!r} must be one of s, min, h, day",
                         hint=f"{write}; a slower rate in a bigger unit: '3/day', not '1/8h'.")
    if not 1 <= calls <= MAX_CALLS:
        raise LimitError(f"{what} {value!r}: the number of calls must be from 1 to {MAX_CALLS:,}",
                         hint=f"{write}, from 1 call. For no bound on the rate, leave rate out.")
    shown = {"sec": "s", "second": "s", "minute": "min", "hour": "h", "d": "day"}.get(unit, unit)
    return Rate(calls=calls, period=UNITS[unit], text=f"{calls}/{shown}")


def check_concurrency(value: Any, *, what: str = "concurrency") -> int | None:
    """How many calls at once (None: no bound), or a `LimitError`. A declaration has no 0: a limit
    without a bound on calls at once leaves `concurrency` out (an operator's 0 lifts it at run time)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_CONCURRENCY:
        zero = isinstance(value, int) and not isinstance(value, bool) and value == 0
        raise LimitError(f"{what} must be a whole number of calls at once from 1 to {MAX_CONCURRENCY:,}; "
                         f"got {value!r}",
                         hint=("For no bound on calls at once leave concurrency out: Limit(rate=\"5/s\")."
                               if zero else "Write a whole number, such as concurrency=4 (no quotes)."))
    return value


@dataclass(frozen=True, init=False)
class Limit:
    """A rate, a concurrency, or both, optionally per value of an input field (`key`)."""

    rate: Rate | None
    concurrency: int | None
    key: str | None

    def __init__(self, *, rate: str | Rate | None = None, concurrency: int | None = None,
                 key: str | None = None) -> None:
        if rate is None and concurrency is None:
            raise LimitError("Limit needs a rate ('10/s'), a concurrency (4), or both",
                             hint="Give one or both: Limit(rate=\"10/s\"), Limit(concurrency=4), "
                                  "Limit(rate=\"10/s\", concurrency=4). No limit at all: leave limit= out.")
        if key is not None and (not isinstance(key, str) or not key.isidentifier()):
            raise LimitError(f"Limit key must name an input field, such as 'account'; got {key!r}",
                             hint="Give the name of a field of the input, as text: key=\"account\".")
        object.__setattr__(self, "rate", None if rate is None else parse_rate(rate, what="Limit rate"))
        object.__setattr__(self, "concurrency", check_concurrency(concurrency, what="Limit concurrency"))
        object.__setattr__(self, "key", key)

    def describe(self) -> str:
        """`5/s, 2 at once, per account`."""
        said = [str(self.rate)] if self.rate else []
        if self.concurrency is not None:
            said.append(f"{self.concurrency} at once")
        if self.key:
            said.append(f"per {self.key}")
        return ", ".join(said)

    def key_value(self, input_json: Any) -> str:
        """The key's value in a call's input, as text ('' when unkeyed or absent)."""
        if self.key is None or not isinstance(input_json, dict):
            return ""
        value = input_json.get(self.key)
        return "" if value is None else str(value)[:200]


def check_limit(limit: Any, *, where: str, inputs: Iterable[type[BaseModel]]) -> Limit | None:
    """The declaration's limit, its key checked against `inputs` (one of them must have the field)."""
    if limit is None:
        return None
    if not isinstance(limit, Limit):
        raise LimitError(f"{where}: limit must be a Limit(rate=..., concurrency=..., key=...); got {limit!r}",
                         hint="Write limit=Limit(rate=\"5/s\"), not limit=\"5/s\" (from runs.authoring import "
                              "Limit).")
    models = list(inputs)
    if limit.key is not None and not any(limit.key in model.model_fields for model in models):
        fields = sorted({name for model in models for name in model.model_fields})
        raise LimitError(f"{where}: limit key {limit.key!r} is not a field of the input "
                         f"({', '.join(m.__name__ for m in models) or 'none'}); its fields are "
                         f"{', '.join(fields) or 'none'}",
                         hint=f"Key on one of those fields (key=\"{fields[0] if fields else 'account'}\"), or "
                              "leave key out for one budget for every call.")
    return limit


# What a limited call does the moment its request leaves (`departing`): the engine sets it around a
# limited call's driver (`runs.limits.gate.Timed`), the shared HTTP client calls it just before it
# sends, so a call's start time holds for when it leaves, not when the engine let it through.
_departing: ContextVar[Callable[[], None] | None] = ContextVar("sanoma_limit_departing", default=None)


def departing() -> None:
    """A request of the current call is about to leave: wait for its start time (a limited call)."""
    ready = _departing.get()
    if ready is not None:
        ready()


__all__ = ["Limit", "LimitError", "Rate", "SPACING_MARGIN", "UNITS", "check_concurrency", "check_limit", "departing",
           "parse_rate"]
