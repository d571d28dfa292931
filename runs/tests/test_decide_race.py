"""Two decisions sent at once to one approval from two processes: exactly one wins, the other is
answered `already_decided` naming the winner.

Two real OS processes (spawn; started once for the module, each test hands them a decision) call
`approvals.decide` against the test database while a worker thread of this process applies
decisions, as `manage.py worker` would. Runs on SQLite (a file) and on PostgreSQL.

The module imports nothing from Django at the top: a spawned process imports it to find its
target before it has set Django up.
"""
from __future__ import annotations

import multiprocessing
import queue
import threading
import time

import pytest

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.process]


def _decider(database, barrier, jobs, results):
    """A separate process, started once for the module: set Django up on the test database, then for
    each job wait for the other process at the barrier and decide; `None` ends it."""
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sanoma_site.settings")
    from django.conf import settings

    settings.DATABASES["default"]["NAME"] = database  # the test database, before any connection
    import django

    django.setup()
    from django.contrib.contenttypes.models import ContentType
    from django.db import connections

    from connectors.errors import error_code
    from runs.approvals import services as approvals

    while (job := jobs.get()) is not None:
        run_id, by, note, message_id = job
        # Each test empties the tables and makes the content types again (new ids): none kept from the last.
        ContentType.objects.clear_cache()
        try:
            barrier.wait(timeout=60)
            try:
                # Naming the approval, as the inbox's buttons do: a decision that arrives once the other
                # has been applied (a loaded machine) is told who decided it, not that nothing is pending.
                state = approvals.decide(run_id=run_id, decision="approve", by=by, note=note,
                                         approval_id="approval-1", message_id=message_id, timeout=30)
                results.put({"who": message_id, "outcome": "decided", "state": state})
            except Exception as err:  # reported to the test, which judges it
                results.put({"who": message_id, "outcome": "refused", "code": error_code(err), "message": str(err),
                             "data": dict(getattr(err, "data", {}) or {})})
        except BaseException as err:
            results.put({"who": message_id, "outcome": "crashed", "message": repr(err)})
        finally:
            connections.close_all()  # no connection held between tests (the next one empties the tables)


class Deciders:
    """Two real OS processes (spawn) that decide at once when given a job each: started once for the
    module (each sets Django up, about a second of CPU), used by every test in turn."""

    def __init__(self, database: str) -> None:
        spawn = multiprocessing.get_context("spawn")
        self.barrier = spawn.Barrier(2)  # kept: its semaphore must outlive the children's start
        self.results = spawn.Queue()
        self.jobs = [spawn.Queue(), spawn.Queue()]
        self.processes = [spawn.Process(target=_decider, args=(database, self.barrier, jobs, self.results),
                                        daemon=True) for jobs in self.jobs]
        for process in self.processes:
            process.start()

    def decide(self, run_id: str, deciders: tuple[str, str]) -> list[dict]:
        """Each process decides the run's approval as one of `deciders`, at once; their answers."""
        assert all(process.is_alive() for process in self.processes), "a deciding process ended"
        for i, (jobs, by) in enumerate(zip(self.jobs, deciders, strict=True)):
            jobs.put((run_id, by, f"note {i}", f"msg-{i}"))
        answers: list[dict] = []
        ends = time.monotonic() + 120  # only turns a hang into a failure
        while len(answers) < len(self.processes):
            try:
                answers.append(self.results.get(timeout=0.5))
            except queue.Empty:
                ended = [p.exitcode for p in self.processes if not p.is_alive()]
                assert not ended and time.monotonic() < ends, f"no answer (deciding processes ended: {ended})"
        return answers

    def close(self) -> None:
        for jobs in self.jobs:
            jobs.put(None)
        for process in self.processes:
            process.join(timeout=60)
            if process.is_alive():
                process.kill()


@pytest.fixture(scope="module")
def processes(django_db_setup):
    from django.db import connection

    database = connection.settings_dict["NAME"]
    if connection.vendor == "sqlite":
        assert ":memory:" not in database and "mode=memory" not in database, database
    both = Deciders(database)
    try:
        yield both
    finally:
        both.close()


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
def test_two_decisions_at_once_from_two_processes_one_wins(engine_for, deciders, approver, processes):
    from runs.models import Approval, DecisionMessage, LedgerRecord
    from runs.testing import make_user

    make_user("carol", groups=["marketing"])
    make_user("dave", groups=["marketing"])
    make_user("lead")
    engine = engine_for(_workflow())
    run = engine.run("race", {"approver": approver})
    assert run.status == "waiting"

    worker = Worker(engine.config)
    worker.start()
    try:
        answers = processes.decide(run.id, deciders)
        # The decision queued the run; let the worker take it (it drains every 20 ms) before it stops.
        waited_until = time.monotonic() + 30
        while type(run).objects.get(pk=run.id).status == "queued" and time.monotonic() < waited_until:
            time.sleep(0.05)
    finally:
        worker.stop()
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
