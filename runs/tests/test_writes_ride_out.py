"""Every engine write rides out a lost database connection: the run goes on, nothing is repeated.

One workflow reaches every kind of write an advance makes: a call to a vendor that ignores keys
(its intent, and, after a crash leaves it in doubt, its reconcile's answer and its checkpoint), a
message wait (its start and the message it read), an approval (asked, then a decision applied), a
child run (started, waited for) and the runs' ends. At one of those writes, through the engine's
test-only fault point right before it, the engine's PostgreSQL connection is killed from another
connection (`pg_terminate_backend`), as a database restart or failover does. The write must be made
on a new connection and the run finish as it would have: one payment at the vendor, one child, one
record of each kind, an unbroken ledger chain.

PostgreSQL only (the test kills a real server connection); `transaction=True` so the engine works
in autocommit, as a worker does.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from django.db import connection

from runs import ledger, services
from runs.approvals import services as approvals
from runs.approvals.permissions import principal_of
from runs.authoring import define_workflow
from runs.engine import clock, faults, transitions
from runs.engine.faults import FaultPoint
from runs.models import Approval, LedgerRecord, Run, RunStatus
from runs.testing import make_user
from runs.tests.bank_vendor import bank_setup

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="kills a real PostgreSQL connection"),
]


# Finds a payment by the key the engine sent: the same call, not only the same order.
shop_setup = bank_setup("shop", reconcile=True, find_by="key", timeout=5)

child = define_workflow(name="blip-child", uses=["sleep"], run=lambda ctx, input: {"ok": True})


def _parent(ctx, input):
    paid = ctx.shop.payment.create({"order": "o1", "cents": 500})
    word = ctx.wait_message("go")
    approved = ctx.approval("Ship order o1", approver="bob")
    started = ctx.start_run("blip-child", {})
    out = ctx.wait_run(started)
    return {"payment": paid.payment_id, "word": word["w"], "by": approved.approved_by, "child": out}


parent = define_workflow(name="blip", uses=[shop_setup.op("shop.payment.create"), "wait_message", "approval",
                                            "start_run", "wait_run"], run=_parent)

# The writes, in the order the run makes them (the end: the child's, the first to end).
POINTS = [
    FaultPoint.BEFORE_INTENT,
    FaultPoint.BEFORE_RESOLVED,
    FaultPoint.BEFORE_CALL,
    FaultPoint.BEFORE_WAIT,
    FaultPoint.BEFORE_MESSAGE_READ,
    FaultPoint.BEFORE_APPROVAL,
    FaultPoint.BEFORE_DECISION,
    FaultPoint.BEFORE_CHILD,
    FaultPoint.BEFORE_END,
]


class Killed(BaseException):
    """The worker died right after the vendor answered (so the call is left in doubt)."""


def _kill_my_connection(dropped: list[int]) -> Callable[[], None]:
    """A fault: terminate the engine's server connection from another one, and wait until it is gone."""
    import psycopg

    def drop() -> None:
        connection.ensure_connection()
        assert connection.connection is not None
        pid = connection.connection.info.backend_pid
        params = connection.settings_dict
        with psycopg.connect(host=params["HOST"] or "127.0.0.1", port=params["PORT"] or 5432, user=params["USER"],
                             password=params["PASSWORD"] or None, dbname=params["NAME"], autocommit=True) as other:
            assert other.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone() == (True,)
            ends = time.monotonic() + 5
            while other.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone():
                assert time.monotonic() < ends, "the server kept the terminated connection"
                time.sleep(0.01)
        dropped.append(pid)

    return drop


@pytest.fixture
def engine(engine_for) -> Iterator:
    make_user("bob")
    yield engine_for(parent, child, connectors=[shop_setup])
    faults.clear()


def _advance_all(engine) -> None:
    """Drain; a run waiting in doubt is woken at its deadline (the clock moved, not waited for)."""
    engine.drain()
    for wake_at in Run.objects.filter(status=RunStatus.WAITING, waiting_for="in_doubt", wake_at__isnull=False
                                      ).values_list("wake_at", flat=True):
        if wake_at is not None:
            clock.advance(max(timedelta(0), wake_at - clock.now()))
    engine.drain()


@pytest.mark.parametrize("point", POINTS, ids=[p.value for p in POINTS])
def test_a_connection_lost_right_before_an_engine_write_is_ridden_out(engine, point):
    dropped: list[int] = []
    faults.arm(point, _kill_my_connection(dropped))
    run = engine.start("blip")
    services.send_message(run_id=run.id, topic="go", payload={"w": "now"}, by="alice")  # kept for the wait
    # The worker dies right after the vendor took the payment: the call is in doubt.
    faults.arm(FaultPoint.AFTER_DRIVER_CALL, Killed())
    with pytest.raises(Killed):
        engine.drain()
    run.refresh_from_db()
    assert transitions.take_over(run_id=run.id, owner=run.lease_owner, now=clock.now() + timedelta(minutes=5))
    _advance_all(engine)  # reconciles once the attempt's deadline passed, then asks the approval
    run.refresh_from_db()
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "approval"), run.error
    approvals.send_decision(approval=Approval.objects.get(run=run), decision="approve", by=principal_of("bob"))
    _advance_all(engine)
    run.refresh_from_db()

    assert dropped, f"the fault at {point} never fired"
    assert (run.status, run.error) == (RunStatus.FINISHED, None)
    assert run.result == {"payment": "pay_1", "word": "now", "by": "bob", "child": {"ok": True}}
    fake = engine.config.fakes["shop"]
    assert len(fake.state["payments"]) == 1  # the payment was taken once
    assert [c["op"] for c in fake.calls] == ["shop.payment.create", "shop.payment.find"]
    kinds = [r["type"] for r in engine.records(run)]
    for kind in ("op.intent", "op.resolved", "op.called", "message.received", "approval.requested",
                 "approval.decided", "run.child_started", "run.child_ended", "run.finished"):
        assert kinds.count(kind) == 1, (kind, kinds)
    [kid] = Run.objects.filter(parent=run)
    assert kid.status == RunStatus.FINISHED
    assert LedgerRecord.objects.filter(run_id=kid.id, kind="run.finished").count() == 1
    assert not ledger.verify().breaks


def _cut_my_socket(dropped: list[int]) -> Callable[[], None]:
    """A fault: the engine's socket stops reading, as when the server dies without a word (an
    immediate shutdown, a crash, a peer reset). The next statement still reaches the server, but
    its answer never comes back: psycopg raises "consuming input failed: server closed the
    connection unexpectedly", an OperationalError with no SQLSTATE, while reading the result."""
    import socket

    def cut() -> None:
        connection.ensure_connection()
        assert connection.connection is not None
        dropped.append(connection.connection.info.backend_pid)
        sock = socket.socket(fileno=connection.connection.fileno())
        try:
            sock.shutdown(socket.SHUT_RD)
        finally:
            sock.detach()  # the driver still owns the descriptor

    return cut


@pytest.mark.parametrize("point", POINTS, ids=[p.value for p in POINTS])
def test_a_connection_that_closes_while_a_write_waits_for_its_answer_is_ridden_out(engine, point):
    dropped: list[int] = []
    faults.arm(point, _cut_my_socket(dropped))
    run = engine.start("blip")
    services.send_message(run_id=run.id, topic="go", payload={"w": "now"}, by="alice")
    faults.arm(FaultPoint.AFTER_DRIVER_CALL, Killed())
    with pytest.raises(Killed):
        engine.drain()
    run.refresh_from_db()
    assert transitions.take_over(run_id=run.id, owner=run.lease_owner, now=clock.now() + timedelta(minutes=5))
    _advance_all(engine)
    run.refresh_from_db()
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "approval"), run.error
    approvals.send_decision(approval=Approval.objects.get(run=run), decision="approve", by=principal_of("bob"))
    _advance_all(engine)
    run.refresh_from_db()

    assert dropped, f"the fault at {point} never fired"
    assert (run.status, run.error) == (RunStatus.FINISHED, None)
    assert run.result == {"payment": "pay_1", "word": "now", "by": "bob", "child": {"ok": True}}
    assert len(engine.config.fakes["shop"].state["payments"]) == 1
    kinds = [r["type"] for r in engine.records(run)]
    for kind in ("op.intent", "op.resolved", "op.called", "message.received", "approval.requested",
                 "approval.decided", "run.child_started", "run.child_ended", "run.finished"):
        assert kinds.count(kind) == 1, (kind, kinds)
    assert not ledger.verify().breaks


def test_a_connection_lost_while_a_claimed_run_is_read_hands_the_run_back(engine):
    """The reads before the workflow runs (its steps, approvals, messages) are not writes to ride
    out: a lost connection there hands the run back to the queue, neither failing it nor the task."""
    dropped: list[int] = []
    faults.arm(FaultPoint.BEFORE_LOAD, _cut_my_socket(dropped))
    run = engine.start("blip")
    services.send_message(run_id=run.id, topic="go", payload={"w": "now"}, by="alice")
    _advance_all(engine)
    run.refresh_from_db()
    assert dropped
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "approval"), run.error
    approvals.send_decision(approval=Approval.objects.get(run=run), decision="approve", by=principal_of("bob"))
    _advance_all(engine)
    run.refresh_from_db()
    assert (run.status, run.error) == (RunStatus.FINISHED, None)
    assert len(engine.config.fakes["shop"].state["payments"]) == 1
    assert not ledger.verify().breaks
