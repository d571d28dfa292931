"""Counting money calls: the lock that serialises the deciders of one currency, the reservation a
call allowed by the policy takes in the transaction that decides it, and each reservation's
settlement from its call's `op.called` record in the ledger.

The order inside one transaction (`decide`):

1. `lock(currency)`: update the currency's `SpendLock` row. A second decider of the same currency
   waits there until the first commits (PostgreSQL's row lock; SQLite's write lock), so two
   refunds decided at once are decided one after the other.
2. `settle(currency)`: reserved rows the engine could not settle with their call (a run that
   ended without making it; a row reserved before calls settled their rows) follow the ledger.
3. The sums (`runs.spend.sums.spent`), the policy asked with them.
4. Allowed: the call's row is written `reserved` (one row per run and step: a call decided again
   after a crash keeps its row). Not allowed: its row, if any, is `released`.

The reserved row is settled in the transaction that records its call's outcome (`settlement_of`,
`settle_call`, called by the engine's checkpoint of the call): `spent` (of the amount the vendor
answered, when its answer names another one) or `released`. A call left in doubt keeps its row
reserved, and counted, until the reconcile read records what happened.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from django.db import transaction
from django.db.models import F

from connectors.operations import Operation
from runs.models import ENDED_STATUSES, LedgerKind, LedgerRecord, Run
from runs.spend.models import SpendEntry, SpendLock, SpendState
from runs.spend.sums import day_of, month_of, spent

D = TypeVar("D")

# A vendor's answer that shows it refused the call (a 4xx other than 408, a timeout the vendor
# says it did not act on): the money did not move. Every other failure may have moved it.
_NOT_ACTED_CODES = frozenset({"no_driver"})


@dataclass(frozen=True)
class MoneyCall:
    """One money call as the spend table counts it."""

    run_id: str
    seq: int
    op: str
    vendor: str
    workflow: str
    starter: str
    currency: str
    cents: int


def money_call(*, op: Operation, input_json: Any, run_id: str, seq: int, workflow: str,
               starter: str) -> MoneyCall | None:
    """The call as counted, or None when `op` is no money operation naming its amount (or the input
    holds no whole amount there)."""
    money = op.money_of(input_json)
    if op.effect != "money" or money is None:
        return None
    return MoneyCall(run_id=run_id, seq=seq, op=op.id, vendor=op.vendor, workflow=workflow, starter=starter,
                     currency=money.currency or "", cents=money.cents)


_LISTED: dict[int, tuple[Mapping[str, Operation], tuple[str, ...]]] = {}


def money_ops(ops: Mapping[str, Operation] | None) -> tuple[str, ...]:
    """The ids of the money operations naming their amount in `ops` (a config's), as the sums list
    them in `operations`; worked out once per config."""
    if not ops:
        return ()
    kept = _LISTED.get(id(ops))
    if kept is not None and kept[0] is ops:
        return kept[1]
    found = tuple(sorted(op_id for op_id, op in ops.items() if op.effect == "money" and op.money is not None))
    if len(_LISTED) > 64:  # configs come and go in tests; a process has one or two
        _LISTED.clear()
    _LISTED[id(ops)] = (ops, found)
    return found


def sums_for(call: MoneyCall, *, now: datetime, ops: Mapping[str, Operation] | None = None) -> dict[str, Any]:
    """What was spent, as the policy sees it for `call` (the call itself left out); `operations`
    lists every money operation of `ops` (the config's)."""
    return spent(op=call.op, vendor=call.vendor, workflow=call.workflow, starter=call.starter,
                 currency=call.currency, now=now, exclude=(call.run_id, call.seq), listed=money_ops(ops))


def lock(currency: str) -> None:
    """Serialise the deciders of `currency` until the transaction ends (see the module)."""
    if not SpendLock.objects.filter(currency=currency).update(decisions=F("decisions") + 1):
        SpendLock.objects.bulk_create([SpendLock(currency=currency)], ignore_conflicts=True)
        SpendLock.objects.filter(currency=currency).update(decisions=F("decisions") + 1)


def outcome_of(body: Mapping[str, Any]) -> str:
    """What an `op.called` record's body says of the money: `spent`, or `released` when the call
    was refused before or by the vendor."""
    error = body.get("error")
    if not isinstance(error, dict):
        return SpendState.SPENT
    if error.get("code") in _NOT_ACTED_CODES:
        return SpendState.RELEASED
    if error.get("code") in ("policy_denied", "approval_rejected", "approval_withdrawn"):
        return SpendState.RELEASED
    status = error.get("status")
    if isinstance(status, int) and 400 <= status < 500 and status != 408:
        return SpendState.RELEASED
    return SpendState.SPENT


@dataclass(frozen=True)
class Settlement:
    """What a reserved row becomes as its call's outcome is recorded (`cents` None: as reserved)."""

    run_id: str
    seq: int
    state: str
    cents: int | None = None


def answered_cents(op: Operation | None, body: Mapping[str, Any]) -> int | None:
    """The amount the vendor's answer names (its output's field of the operation's amount's name),
    when the call succeeded and the answer has a whole amount there; else None."""
    rule = op.money if op is not None else None
    output = body.get("output")
    if rule is None or body.get("error") is not None or not isinstance(output, Mapping):
        return None
    value = output.get(rule.amount)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def settlement_of(call: MoneyCall, op: Operation, body: Mapping[str, Any]) -> Settlement:
    """What the reserved row of `call` becomes with its `op.called` record's `body`."""
    state = outcome_of(body)
    cents = answered_cents(op, body) if state == SpendState.SPENT else None
    return Settlement(call.run_id, call.seq, state, None if cents == call.cents else cents)


def settle_call(settlement: Settlement, *, now: datetime) -> int:
    """Settle one reserved row, in the caller's transaction (the one that records the call)."""
    fields: dict[str, Any] = {"state": settlement.state, "settled_at": now}
    if settlement.cents is not None:
        fields["cents"] = settlement.cents
    return SpendEntry.objects.filter(run_id=settlement.run_id, seq=settlement.seq,
                                     state=SpendState.RESERVED).update(**fields)


def settle(currency: str, *, now: datetime, ops: Mapping[str, Operation] | None = None) -> int:
    """Reserved rows of `currency` whose call is recorded now follow their `op.called` record (and
    those of runs that ended without making the call are released); how many changed.

    A call's own checkpoint settles its row (`settle_call`): what is left here is the row of a run
    that ended without recording its call, and a row reserved before calls settled their rows.
    With `ops`, a spent row takes the amount the vendor answered (`answered_cents`)."""
    reserved = list(SpendEntry.objects.filter(currency=currency, state=SpendState.RESERVED))
    if not reserved:
        return 0
    records = LedgerRecord.objects.filter(
        kind=LedgerKind.OP_CALLED, run_id__in={row.run_id for row in reserved}).values_list("run_id", "seq", "body")
    bodies = {(run_id, seq): body for run_id, seq, body in records}
    unrecorded = [row for row in reserved if (row.run_id, row.seq) not in bodies]
    # A run that ended without recording the call (cancelled after its worker died between the
    # decision and the call) never makes it: released, unless an op.intent says it may have gone out.
    ended = set(Run.objects.filter(pk__in={row.run_id for row in unrecorded}, status__in=ENDED_STATUSES)
                .values_list("id", flat=True))
    sent = set(LedgerRecord.objects.filter(kind=LedgerKind.OP_INTENT, run_id__in=ended).values_list("run_id", "seq"))
    changed = 0
    for row in reserved:
        body = bodies.get((row.run_id, row.seq))
        cents = row.cents
        if body is not None:
            state = outcome_of(body)
            answered = answered_cents(ops.get(row.op), body) if ops is not None and state == SpendState.SPENT else None
            cents = row.cents if answered is None else answered
        elif row.run_id in ended and (row.run_id, row.seq) not in sent:
            state = SpendState.RELEASED
        else:
            continue
        SpendEntry.objects.filter(pk=row.pk).update(state=state, cents=cents, settled_at=now)
        changed += 1
    return changed


def reserve(call: MoneyCall, *, now: datetime) -> SpendEntry:
    """The call's row, reserved (written, or kept when the call was decided before)."""
    row, _ = SpendEntry.objects.update_or_create(
        run_id=call.run_id, seq=call.seq,
        defaults={"op": call.op, "vendor": call.vendor, "workflow": call.workflow, "starter": call.starter,
                  "currency": call.currency, "cents": call.cents, "state": SpendState.RESERVED, "settled_at": None},
        create_defaults={"op": call.op, "vendor": call.vendor, "workflow": call.workflow, "starter": call.starter,
                         "currency": call.currency, "cents": call.cents, "day": day_of(now), "month": month_of(now),
                         "decided_at": now},
    )
    return row


def release(call: MoneyCall, *, now: datetime) -> int:
    """The call's reserved row (if any) released: it is not carried out."""
    return SpendEntry.objects.filter(run_id=call.run_id, seq=call.seq, state=SpendState.RESERVED).update(
        state=SpendState.RELEASED, settled_at=now)


def decide(call: MoneyCall, *, now: datetime, judge: Callable[[dict[str, Any]], D],
           proceeds: Callable[[D], bool], ops: Mapping[str, Operation] | None = None) -> tuple[D, dict[str, Any]]:
    """Lock, settle, sum, ask `judge` with the sums, and reserve the call when `proceeds(decision)`,
    all in one transaction (the caller's, when it has one open: the run's lease is checked in it).
    The decision and the sums it was asked with."""
    with transaction.atomic():
        lock(call.currency)
        settle(call.currency, now=now, ops=ops)
        sums = sums_for(call, now=now, ops=ops)
        decision = judge(sums)
        if proceeds(decision):
            reserve(call, now=now)
        else:
            release(call, now=now)
    return decision, sums


def rows_of(run_ids: Iterable[str]) -> list[SpendEntry]:
    return list(SpendEntry.objects.filter(run_id__in=list(run_ids)).order_by("run_id", "seq"))
