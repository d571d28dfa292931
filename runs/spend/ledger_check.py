"""The spend table against the ledger, its record of truth: `check` says where they differ,
`rebuild` makes the table say what the ledger says (`manage.py spend check` / `spend rebuild`).

What the ledger says of a month: every `op.called` record of a money operation naming its amount
(in the config), recorded from the day before the month began (a call decided on the month's eve
may be recorded after midnight), is a call that was carried out or refused. A refused one
(`policy_denied`, `approval_rejected`, `approval_withdrawn`) never held a row; a carried-out one is
one row of its amount (the vendor's answer's, when it names another: `answered_cents`) and
currency, `spent`, or `released` when the vendor refused it (`runs.spend.services.outcome_of`). The
rows keep the day their call was decided on; a row the ledger lacks is dated by its record.

A call's checkpoint settles its row with its record; before comparing, reserved rows that are left
(a run that ended without its call, a row reserved before calls settled their rows) are settled as
the next decision in their currency would (`runs.spend.services.settle`). Not compared: reserved
rows of calls with no `op.called` yet (under way, or in doubt), rows of runs retention removed
(`PrunedRun`: their sums stay), rows the scenario steps seed (no run).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from django.db import transaction

from connectors.operations import Operation
from runs.engine import clock
from runs.models import LedgerKind, LedgerRecord, Run
from runs.retention.models import PrunedRun
from runs.spend.models import SpendEntry, SpendState
from runs.spend.services import answered_cents, lock, outcome_of, settle
from runs.spend.sums import day_of, month_of

REFUSED = ("policy_denied", "approval_rejected", "approval_withdrawn")


@dataclass
class Difference:
    run_id: str
    seq: int
    what: str  # "missing" | "differs" | "refused"
    ledger: dict[str, Any] | None
    table: dict[str, Any] | None

    def said(self) -> str:
        where = f"{self.run_id} step {self.seq}"
        if self.what == "missing":
            return f"{where}: the ledger has {_shown(self.ledger)}; the table has no row"
        if self.what == "refused":
            return f"{where}: the ledger shows the call refused; the table counts {_shown(self.table)}"
        return f"{where}: the ledger has {_shown(self.ledger)}; the table has {_shown(self.table)}"


@dataclass
class Report:
    month: date
    calls: int = 0  # money calls the ledger records for the month
    under_way: int = 0  # reserved rows with no op.called yet
    kept: int = 0  # rows of pruned runs, left as they are
    differences: list[Difference] = field(default_factory=list)
    fixed: int = 0


def _shown(row: Mapping[str, Any] | None) -> str:
    if not row:
        return "nothing"
    return f"{row['cents']} {row['currency'] or '(no currency)'} {row['state']}"


def _month_start(month: date) -> datetime:
    return datetime(month.year, month.month, 1, tzinfo=clock.now().tzinfo)


def _expected(ops: Mapping[str, Operation], month: date) -> dict[tuple[str, int], dict[str, Any]]:
    since = clock.to_ms(_month_start(month) - timedelta(days=1))
    money_ops = {op_id for op_id, op in ops.items() if op.effect == "money" and op.money is not None}
    found: dict[tuple[str, int], dict[str, Any]] = {}
    records = LedgerRecord.objects.filter(kind=LedgerKind.OP_CALLED, at__gte=since).values_list(
        "run_id", "seq", "at", "workflow", "body")
    calls = []
    for run_id, seq, at, workflow, body in records.iterator():
        op_id = body.get("op") if isinstance(body, dict) else None
        # A sandbox run's money went to its fakes: never the company's spend (its records say so).
        if op_id in money_ops and body.get("sandbox") is not True:
            calls.append((run_id, seq, at, workflow, body))
    starters = dict(Run.objects.filter(pk__in={c[0] for c in calls}).values_list("id", "started_by"))
    for run_id, seq, at, workflow, body in calls:
        op = ops[body["op"]]
        money = op.money_of(body.get("input"))
        if money is None:
            continue
        error = body.get("error") if isinstance(body.get("error"), dict) else {}
        if error.get("code") in REFUSED:
            found[(run_id, seq)] = {"refused": True}
            continue
        moment = clock.from_ms(at)
        state = outcome_of(body)
        answered = answered_cents(op, body) if state == SpendState.SPENT else None
        found[(run_id, seq)] = {
            "op": op.id, "vendor": op.vendor, "workflow": workflow, "starter": starters.get(run_id, ""),
            "currency": money.currency or "", "cents": money.cents if answered is None else answered, "state": state,
            "day": day_of(moment), "month": month_of(moment), "decided_at": moment,
        }
    return found


def check(*, ops: Mapping[str, Operation], month: date | None = None, fix: bool = False) -> Report:
    """Compare the month's rows with the ledger (this UTC month by default); `fix` makes the table
    agree, in one transaction."""
    month = (month or month_of(clock.now())).replace(day=1)
    report = Report(month=month)
    with transaction.atomic():
        # Reserved rows whose call is recorded move along first, as the next decision would move them.
        for currency in set(SpendEntry.objects.filter(state=SpendState.RESERVED).values_list("currency", flat=True)):
            lock(currency)
            settle(currency, now=clock.now(), ops=ops)
        expected = _expected(ops, month)
        rows = {(r.run_id, r.seq): r for r in SpendEntry.objects.filter(month__gte=month - timedelta(days=1))}
        rows.update({(r.run_id, r.seq): r for r in SpendEntry.objects.filter(
            run_id__in={run_id for run_id, _ in expected}, seq__in={seq for _, seq in expected})})
        pruned = set(PrunedRun.objects.filter(run_id__in={run_id for run_id, _ in rows}).values_list(
            "run_id", flat=True))
        for key, wanted in expected.items():
            row = rows.get(key)
            if wanted.get("refused"):
                if row is not None and row.state != SpendState.RELEASED:
                    report.differences.append(Difference(*key, "refused", None, _plain(row)))
                    if fix:
                        SpendEntry.objects.filter(pk=row.pk).update(state=SpendState.RELEASED, settled_at=clock.now())
                continue
            if wanted["month"] != month and (row is None or row.month != month):
                continue  # recorded on the month's eve, decided the month before
            report.calls += 1
            if row is None:
                report.differences.append(Difference(*key, "missing", _plain_dict(wanted), None))
                if fix:
                    SpendEntry.objects.create(run_id=key[0], seq=key[1], settled_at=clock.now(), **wanted)
                continue
            mismatched = {name: wanted[name] for name in ("op", "currency", "cents", "state")
                          if getattr(row, name) != wanted[name]}
            if mismatched:
                report.differences.append(Difference(*key, "differs", _plain_dict(wanted), _plain(row)))
                if fix:
                    SpendEntry.objects.filter(pk=row.pk).update(settled_at=clock.now(), **mismatched)
        for key, row in rows.items():
            if key in expected or row.month != month:
                continue
            if row.run_id in pruned or row.run_id.startswith("scenario-seed-"):
                report.kept += 1
            elif row.state == SpendState.RESERVED:
                report.under_way += 1
            else:
                report.kept += 1  # settled, and its record before the window: nothing to compare
        if fix:
            report.fixed = len(report.differences)
    return report


def _plain(row: SpendEntry) -> dict[str, Any]:
    return {"cents": row.cents, "currency": row.currency, "state": row.state}


def _plain_dict(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"cents": row["cents"], "currency": row["currency"], "state": row["state"]}
