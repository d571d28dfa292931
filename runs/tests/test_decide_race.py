"""Two decisions sent at once to one approval from two processes: exactly one wins, the other is
answered `already_decided` naming the winner.

Real OS processes (spawn) call `approvals.decide` against the test database while a worker thread
of this process applies decisions, as `manage.py worker` would. Runs on SQLite (a file) and on
PostgreSQL.

The module imports nothing from Django at the top: a spawned process imports it to find its
target before it has set Django up.
"""
from __future__ import annotations

import multiprocessing
import threading
import time

import pytest

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.process]


def _decide_in_child(database, run_id, by, note, message_id, barrier, results):
    """A separate process: set Django up on the test database, wait for the other, then decide."""
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sanoma_site.settings")
    from django.conf import settings

    settings.DATABASES["default"]["NAME"] = database  # the test database, before any connection
    import django

    django.setup()
    from django.db import connections

    from connectors.errors import error_code
    from runs.approvals import services as approvals

    try:
        barrier.wait(timeout=60)
        try:
            # Naming the approval, as the inbox's buttons do: a decision that arrives once the other
            # has been applied (a loaded machine) is told who decided it, not that nothing is pending.
            state = approvals.decide(run_id=run_id, decision="approve", by=by, note=note, approval_id="approval-1",
                                     message_id=message_id, timeout=30)
            results.put({"who": message_id, "outcome": "decided", "state": state})
        except Exception as err:  # reported to the test, which judges it
            results.put({"who": message_id, "outcome": "refused", "code": error_code(err), "message": str(err),
                         "data": dict(getattr(err, "data", {}) or {})})
    except BaseException as err:
        results.put({"who": message_id, "outcome": "crashed", "message": repr(err)})
    finally:
        connections.close_all()


class Worker(threading.Thread):
    """`manage.py worker` in a thread: drains runnable runs until told to stop."""

    def __init__(self, config) -> None:
        super().__init__(daemon=True)
        self.config = config
        self.stopping = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        from django.db import connection

        from runs.testing import drain

        try:
            while not self.stopping.is_set():
                drain(self.config, worker_id="race-worker")
                time.sleep(0.02)
        except BaseException as err:  # surfaced by the test
            self.error = err
        finally:
            connection.close()

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=30)


def _workflow():
    from pydantic import BaseModel

    from runs.authoring import define_workflow
    from runs.tests.fixtures import REFUND

    class Input(BaseModel):
        approver: str

    def run(ctx, input):
        ok = ctx.approval("Refund order 1", approver=input.approver)
        ctx.acme.order.refund({"order_id": "1", "amount": 10})
        ctx.sleep(hours=1)  # the run goes on after the decision: a late decision is not run_ended
        return {"by": ok.approved_by, "note": ok.note}

    return define_workflow(name="race", input=Input, uses=[REFUND, "approval", "sleep"], run=run)


@pytest.mark.parametrize(
    "deciders, approver",
    [
        (("carol", "dave"), "group:marketing"),  # two people at once
        (("carol", "carol"), "group:marketing"),  # one person sending two notes
        (("lead", "lead"), "lead"),  # a person approver, twice
    ],
    ids=["two-people", "one-person-two-notes", "person-approver-twice"],
)
def test_two_decisions_at_once_from_two_processes_one_wins(engine_for, deciders, approver):
    from django.db import connection

    from runs.models import Approval, DecisionMessage, LedgerRecord
    from runs.testing import make_user

    database = connection.settings_dict["NAME"]
    if connection.vendor == "sqlite":
        assert ":memory:" not in database and "mode=memory" not in database, database

    make_user("carol", groups=["marketing"])
    make_user("dave", groups=["marketing"])
    make_user("lead")
    engine = engine_for(_workflow())
    run = engine.run("race", {"approver": approver})
    assert run.status == "waiting"

    spawn = multiprocessing.get_context("spawn")
    barrier = spawn.Barrier(2)
    results = spawn.Queue()
    processes = [
        spawn.Process(target=_decide_in_child,
                      args=(database, run.id, by, f"note {i}", f"msg-{i}", barrier, results))
        for i, by in enumerate(deciders)
    ]
    worker = Worker(engine.config)
    worker.start()
    try:
        for process in processes:
            process.start()
        answers = [results.get(timeout=120) for _ in processes]
        for process in processes:
            process.join(timeout=60)
    finally:
        worker.stop()
        for process in processes:
            if process.is_alive():
                process.kill()
    assert worker.error is None, worker.error
    assert all(a["outcome"] in ("decided", "refused") for a in answers), answers

    won = [a for a in answers if a["outcome"] == "decided"]
    lost = [a for a in answers if a["outcome"] == "refused"]
    assert len(won) == 1 and len(lost) == 1, answers
    winner_state = won[0]["state"]
    winner = winner_state["decided_by"]
    assert winner_state["status"] == "approved"
    assert winner_state["decided_with"] == won[0]["who"]
    assert winner == deciders[int(won[0]["who"][-1])]

    (loser,) = lost
    assert loser["code"] == "already_decided", loser
    assert loser["data"]["decided_by"] == winner and loser["data"]["status"] == "approved"
    assert f"by {winner}" in loser["message"]

    approval = Approval.objects.get(run=run)
    assert approval.status == "approved" and approval.decided_by == winner
    assert approval.decided_with == won[0]["who"]
    assert LedgerRecord.objects.filter(run_id=run.id, kind="approval.decided").count() == 1
    assert DecisionMessage.objects.filter(approval=approval, outcome="decided").count() == 1
    run.refresh_from_db()
    assert run.status == "waiting" and run.waiting_for == "sleep", (run.status, run.error)
    assert len(engine.fake.state["refunds"]) == 1  # the approved refund happened once
    # the loser may be refused before sending
    assert DecisionMessage.objects.filter(approval=approval).count() in (1, 2)
