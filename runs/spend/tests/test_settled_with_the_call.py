"""A money call's reservation is settled in the transaction that records the call: right after its
`op.called` record commits, the spend table says `spent` (of the amount the vendor answered) or
`released`, before any other decision reads it. A worker dying before the record leaves the row
reserved, and counted. On SQLite and PostgreSQL alike."""
from __future__ import annotations

from datetime import timedelta

import pytest

from runs.engine import clock, faults, transitions
from runs.engine.faults import FaultPoint
from runs.models import LedgerRecord, Run, RunStatus
from runs.spend import ledger_check
from runs.spend.models import SpendEntry
from runs.spend.tests.support import REFUND, budget_policy, pay

pytestmark = pytest.mark.django_db


class Killed(BaseException):
    """The worker died."""


@pytest.fixture
def engine(engine_for, tmp_path):
    yield engine_for(REFUND, connectors=[pay], policy=budget_policy(tmp_path / "p"))
    faults.clear()


def as_the_call_is_recorded(engine, input: dict) -> tuple[Run, list[tuple[int, str]]]:
    """Run a refund; what the spend table says of it once its call is recorded, before the run
    ends (the run's end is its next write: nothing else has touched the table in between)."""
    seen: list[tuple[int, str]] = []

    def look() -> None:
        assert LedgerRecord.objects.filter(kind="op.called").exists()
        seen.extend(SpendEntry.objects.order_by("id").values_list("cents", "state"))

    faults.arm(FaultPoint.BEFORE_END, look)
    run = engine.run("refund", input)
    return run, seen


def test_right_after_the_call_is_recorded_the_row_says_spent(engine):
    run, seen = as_the_call_is_recorded(engine, {"amount_cents": 30_000})
    assert run.status == "finished" and seen == [(30_000, "spent")]


def test_right_after_a_refused_refund_is_recorded_its_row_says_released(engine):
    run, seen = as_the_call_is_recorded(engine, {"order_id": "refused", "amount_cents": 30_000})  # a 402
    assert run.status == "failed" and seen == [(30_000, "released")]


def test_the_row_counts_the_amount_the_vendor_answered(engine):
    run, seen = as_the_call_is_recorded(engine, {"order_id": "half-left", "amount_cents": 30_000})
    assert run.status == "finished" and seen == [(15_000, "spent")]
    assert ledger_check.check(ops=engine.config.ops).differences == []
    assert engine.run("refund", {"amount_cents": 85_000}).status == "finished"  # 15,000 counted, not 30,000


def test_a_worker_dying_before_the_record_leaves_the_row_reserved_and_counted(engine):
    faults.arm(FaultPoint.AFTER_DRIVER_CALL, Killed())  # the vendor refunded; nothing is recorded
    started = engine.start("refund", {"amount_cents": 90_000})
    with pytest.raises(Killed):
        engine.drain()
    assert list(SpendEntry.objects.values_list("cents", "state")) == [(90_000, "reserved")]
    assert not LedgerRecord.objects.filter(run_id=started.id, kind="op.called").exists()
    assert engine.run("refund", {"amount_cents": 20_000}).status == "waiting"  # the 900.00 may have moved

    stuck = Run.objects.get(pk=started.id)
    assert transitions.take_over(run_id=stuck.id, owner=stuck.lease_owner, now=clock.now() + timedelta(minutes=5))
    engine.drain()
    stuck.refresh_from_db()
    assert stuck.status == RunStatus.FINISHED
    assert list(SpendEntry.objects.filter(run_id=stuck.id).values_list("cents", "state")) == [(90_000, "spent")]
    assert len(engine.config.fakes["pay"].state["refunds"]) == 1  # the vendor's key: one refund
    report = ledger_check.check(ops=engine.config.ops)
    assert (report.calls, report.differences) == (1, [])
