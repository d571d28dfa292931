"""Drawing from the limits' budgets, and changing a limit at run time.

Each draw is one statement on the shared tables, so workers on every host draw from one budget:
- a rate: `reserve` takes the time `max(next_at, now)` and moves the cursor one interval past it
  (an `INSERT ... ON CONFLICT DO UPDATE ... RETURNING`, on PostgreSQL and SQLite alike);
- a concurrency: `acquire` takes a free slot (or one whose lease ended: its worker died) with a
  conditional `UPDATE`, `release` gives it back;
- a vendor's `Retry-After`: `push` moves the cursor to the time the vendor named.
"""
from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.backends.utils import CursorWrapper
from django.db.models import Count, F, Q, QuerySet, Value
from django.db.models.functions import Least

from connectors.errors import ErrorCode, InvalidInput, IssueCode, SanomaError, input_issue
from connectors.limits import MAX_CONCURRENCY, RATE_EXAMPLES, Limit, Rate, parse_rate
from runs.approvals.permissions import Principal, permission_denied, principal_of
from runs.collections.definition import DATA_VENDOR
from runs.config.registry import get_config
from runs.config.resolution import ResolvedConfig
from runs.engine import clock, controls, transitions
from runs.limits import RATE_WAIT, SLOT_WAIT, overrides
from runs.limits.models import LimitCursor, LimitHold, LimitOverride, LimitSlot
from runs.models import Run, RunStatus

log = logging.getLogger("sanoma.limits")

OFF = "off"
SLOT_TRIES = 3  # a slot taken by another worker between the look and the update: look again


@contextmanager
def _budget() -> Iterator[CursorWrapper]:
    """One short transaction on a budget. On PostgreSQL it does not wait for its commit to reach the
    disk (`synchronous_commit off`): a budget's last moments lost in a database crash are harmless
    (a start time given twice, a slot seen free), and the wait would cost every call a flush."""
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL synchronous_commit TO OFF")
        yield cursor


def _greatest() -> str:
    return "GREATEST" if connection.vendor == "postgresql" else "MAX"


def reserve(*, scope: str, key: str, interval_ms: int, now_ms: int) -> int:
    """Take the next start time of a rate budget (ms): now, or later when the budget is spent."""
    sql = (f"INSERT INTO runs_limitcursor (scope, key, next_at) VALUES (%s, %s, %s) "
           f"ON CONFLICT (scope, key) DO UPDATE SET next_at = {_greatest()}(runs_limitcursor.next_at, %s) + %s "
           f"RETURNING next_at")
    with _budget() as cursor:
        cursor.execute(sql, [scope, key, now_ms + interval_ms, now_ms, interval_ms])
        row = cursor.fetchone()
    return int(row[0]) - interval_ms


def push(*, scope: str, key: str, until_ms: int) -> None:
    """No call of this budget starts before `until_ms` (a vendor's `Retry-After`)."""
    sql = (f"INSERT INTO runs_limitcursor (scope, key, next_at) VALUES (%s, %s, %s) "
           f"ON CONFLICT (scope, key) DO UPDATE SET next_at = {_greatest()}(runs_limitcursor.next_at, %s)")
    with _budget() as cursor:
        cursor.execute(sql, [scope, key, until_ms, until_ms])


def acquire(*, scope: str, key: str, slots: int, holder: str, until_ms: int, now_ms: int) -> int | None:
    """Take a free slot of a concurrency budget of `slots` (its number), or None when all are held.

    The budget's rows are made on first use (and again after a reset, by whichever worker comes first)."""
    free = "(holder = '' OR until < %s)"
    sql = (f"UPDATE runs_limitslot SET holder = %s, until = %s WHERE id = (SELECT id FROM runs_limitslot "
           f"WHERE scope = %s AND key = %s AND slot < %s AND {free} ORDER BY random() LIMIT 1) AND {free} "
           f"RETURNING slot")
    for _ in range(SLOT_TRIES):
        with _budget() as cursor:
            cursor.execute(sql, [holder, until_ms, scope, key, slots, now_ms, now_ms])
            row = cursor.fetchone()
        if row is not None:
            return int(row[0])
        counted = LimitSlot.objects.filter(scope=scope, key=key, slot__lt=slots).aggregate(
            made=Count("id"), free=Count("id", filter=Q(holder="") | Q(until__lt=now_ms)))
        if counted["made"] < slots:
            LimitSlot.objects.bulk_create([LimitSlot(scope=scope, key=key, slot=i) for i in range(slots)],
                                          ignore_conflicts=True)
        elif not counted["free"]:
            return None
    return None


def release(*, scope: str, key: str, slot: int, holder: str) -> None:
    with _budget() as cursor:
        cursor.execute("UPDATE runs_limitslot SET holder = '', until = 0 WHERE scope = %s AND key = %s AND slot = %s "
                       "AND holder = %s", [scope, key, slot, holder])


def wake_one(waiting_for: str) -> bool:
    """Wake the run that has waited longest for `waiting_for` (a slot was just given back); True when
    one was woken. The others look again at their next poll."""
    run_id = (Run.objects.filter(status=RunStatus.WAITING, waiting_for=waiting_for).order_by("updated_at")
              .values_list("pk", flat=True).first())
    if run_id is None:
        return False
    with transaction.atomic():
        return transitions.wake(run_id=run_id, now=clock.now())


def new_work_waiting(*, queued_before: datetime) -> bool:
    """Whether a run queued before `queued_before` still waits for a worker to take it (every worker
    is busy) and holds no start time: a run that will call at once, not wait for its turn. A paused
    workflow's runs (queued, `waiting_for` set, no task) do not count."""
    return (Run.objects.filter(status=RunStatus.QUEUED, waiting_for="", queued_at__lte=queued_before)
            .exclude(pk__in=LimitHold.objects.values("run_id")).exists())


def holds_of(holder: str) -> dict[tuple[str, str], int]:
    """The start times a waiting call has taken, by (scope, key)."""
    return {(h.scope, h.key): h.at for h in LimitHold.objects.filter(holder=holder)}


def keep_holds(holder: str, held: dict[tuple[str, str], int]) -> None:
    """Keep the start times a call has taken while its run waits for them."""
    with _budget():
        LimitHold.objects.filter(holder=holder).delete()
        run_id = holder.rpartition(":")[0]
        LimitHold.objects.bulk_create([LimitHold(holder=holder, run_id=run_id, scope=scope, key=key, at=at)
                                       for (scope, key), at in held.items()])


def drop_holds(holder: str) -> None:
    LimitHold.objects.filter(holder=holder).delete()


# ---- an operator's changes ----------------------------------------------------------------------

def _bad(field: str, message: str) -> InvalidInput:
    return InvalidInput(message, data={"issues": [input_issue([field], message, IssueCode.INVALID)]})


def _check_can_change(principal: Principal) -> None:
    if not principal.has_global("runs.pause"):
        raise permission_denied(f"{principal.id} may not change limits: that takes runs.pause (operators)",
                                user=principal.id)


# The runtime's own connectors (child runs, the wakeup, the change workflow's remotes; the company's
# collections): limiting them would hold up sanoma's own work (a drift check, a deploy), not a vendor.
RUNTIME_VENDORS = frozenset({"sanoma", DATA_VENDOR})


def check_target(target: Any, config: ResolvedConfig) -> str:
    """A connector's vendor or an operation's id of the config; `invalid_input` naming them."""
    if isinstance(target, str) and target.split(".", 1)[0] in RUNTIME_VENDORS:
        vendor = target.split(".", 1)[0]
        whose = f"{target} is sanoma's own connector" if target == vendor else \
            f"{target} is an operation of sanoma's own connector {vendor}"
        raise _bad("target", f"{whose}, not a vendor's: its calls take no limit (limit the vendor's connector or "
                             "operation instead)")
    vendors = sorted({c.vendor for c in config.connectors if hasattr(c, "vendor")} - RUNTIME_VENDORS)
    if not isinstance(target, str) or (target not in vendors and target not in config.ops):
        raise _bad("target", f"No connector or operation {target!r}; the connectors are "
                             f"{', '.join(vendors) or 'none'} (or name an operation, such as "
                             f"{next(iter(sorted(config.ops)), 'shop.order.get')})")
    return target


def check_rate_text(rate: Any) -> str:
    """An override's rate: '' (keep), 'off', or a rate such as '5/s' (as it is shown)."""
    if rate is None or rate == "":
        return ""
    if isinstance(rate, str) and rate.strip().lower() == OFF:
        return OFF
    try:
        return parse_rate(rate).text
    except ValueError as err:
        # An error that already says the form only needs the way to lift a rate added.
        said = str(err)
        raise _bad("rate", f"{said} ({'or off to lift it' if '<calls>/<unit>' in said else ALLOWED_RATE})") from None


ALLOWED_RATE = f"a rate is <calls>/<unit> such as {RATE_EXAMPLES}, or off to lift it"
ALLOWED_CONCURRENCY = f"give a whole number of calls at once from 1 to {MAX_CONCURRENCY:,}, or 0 or off to lift it"


def check_concurrency_value(concurrency: Any) -> int | None:
    """An override's concurrency: None (keep), 0 (off: typed `0` or `off`), or 1 to MAX_CONCURRENCY."""
    if concurrency is None or concurrency == "":
        return None
    value = concurrency
    if isinstance(value, str):
        text = value.strip().lower()
        if text == OFF:
            return 0
        value = int(text) if text.isdigit() else None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_CONCURRENCY:
        raise _bad("concurrency", f"concurrency {concurrency!r}: {ALLOWED_CONCURRENCY}")
    return value


def effective(declared: Limit | None, override: LimitOverride | None) -> tuple[Rate | None, int | None, str | None]:
    """The rate, concurrency and key in force: the declaration's, as an operator's override changes it."""
    rate = declared.rate if declared else None
    concurrency = declared.concurrency if declared else None
    key = declared.key if declared else None
    if override is not None:
        if override.rate == OFF:
            rate = None
        elif override.rate:
            rate = parse_rate(override.rate)
        if override.concurrency is not None:
            concurrency = override.concurrency or None
    return rate, concurrency, key


def _declared(target: str, config: ResolvedConfig) -> Limit | None:
    if target in config.ops:
        return config.ops[target].limit
    return next((c.limit for c in config.connectors if getattr(c, "vendor", None) == target), None)


def waiting_on(target: str) -> QuerySet[Run]:
    """The runs waiting for a turn under the limit of `target` (any key value)."""
    said = Q()
    for kind in (RATE_WAIT, SLOT_WAIT):
        said |= Q(waiting_for=f"{kind} {target}") | Q(waiting_for__startswith=f"{kind} {target} for ")
    return Run.objects.filter(said, status=RunStatus.WAITING)


def _interval_ms(rate: Rate | None) -> int:
    return 0 if rate is None else max(1, round(rate.interval * 1000))


def _retime(target: str, *, old: Rate | None, new: Rate | None, fresh: bool) -> int:
    """In the change's transaction: the runs waiting under the limit of `target` go again now and take
    a new start time under the limit now in force, not the turn the old one gave them. Their kept
    start times are dropped, and each budget's next start is one new interval after its last call
    (the last turn given, or now when turns were given to runs still waiting): a loosened limit lets
    them go at once, a tightened one spaces them anew. `fresh`: the budget starts over. How many
    runs were woken."""
    now = clock.now_ms()
    LimitHold.objects.filter(scope=target).delete()
    if fresh:
        LimitCursor.objects.filter(scope=target).delete()
        LimitSlot.objects.filter(scope=target).delete()
    else:
        LimitCursor.objects.filter(scope=target).update(
            next_at=Least(F("next_at") - _interval_ms(old), Value(now)) + _interval_ms(new))
    woken_at = clock.now()
    return sum(transitions.wake(run_id=run_id, now=woken_at)
               for run_id in waiting_on(target).order_by("updated_at").values_list("pk", flat=True))


def set_override(*, target: Any, rate: Any = None, concurrency: Any = None, by: str | Principal,
                 config: ResolvedConfig | None = None) -> LimitOverride:
    """Change the limit of a connector or an operation from the next call on (every worker); the runs
    waiting under it go again at once, under the new limit."""
    principal = principal_of(by)
    _check_can_change(principal)
    config = config or get_config()
    target = check_target(target, config)
    rate_text, slots = check_rate_text(rate), check_concurrency_value(concurrency)
    if rate_text == "" and slots is None:
        raise _bad("rate", "say what changes: a rate (5/s, or off), a concurrency (2, or off), or both")
    try:
        with transaction.atomic():
            declared = _declared(target, config)
            before = LimitOverride.objects.select_for_update().filter(target=target).first()
            old_rate, _, _ = effective(declared, before)
            made, _ = LimitOverride.objects.update_or_create(
                target=target, defaults={"rate": rate_text, "concurrency": slots, "set_by": principal.id,
                                         "set_at": clock.now()})
            new_rate, _, _ = effective(declared, made)
            woken = _retime(target, old=old_rate, new=new_rate, fresh=False)
            controls.changed()  # the listening workers read the overrides again (runs.engine.controls)
    except IntegrityError:  # set by someone else at the same moment: theirs stands
        raise SanomaError(f"the limit of {target} was just changed by someone else",
                          code=ErrorCode.INVALID_INPUT) from None
    overrides.forget()
    log.debug("limit of %s set by %s: rate %s, concurrency %s; %d waiting runs go again", target, principal.id,
              rate_text or "as declared", "as declared" if slots is None else slots or "off", woken)
    return made


def reset(*, target: Any, by: str | Principal, config: ResolvedConfig | None = None) -> bool:
    """Back to the declared limit, with a fresh budget (its cursors, slots and kept start times
    cleared; the runs waiting under it go again at once). True when there was an override."""
    principal = principal_of(by)
    _check_can_change(principal)
    target = check_target(target, config or get_config())
    with transaction.atomic():
        removed, _ = LimitOverride.objects.filter(target=target).delete()
        woken = _retime(target, old=None, new=None, fresh=True)
        controls.changed()
    overrides.forget()
    log.debug("limit of %s reset by %s; %d waiting runs go again", target, principal.id, woken)
    return bool(removed)


__all__ = ["OFF", "acquire", "check_target", "drop_holds", "effective", "holds_of", "keep_holds", "push", "release",
           "reserve", "reset", "set_override", "waiting_on"]
