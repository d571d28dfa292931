"""How many transactions (and statements) the engine spends: a step, the start, the claim, the end.

A transaction here is a COMMIT Django issues or a statement run in autocommit (each commits
itself), counted on the default connection as `bench/engine.py` (e) counts them. Real commits
(`transaction=True`), on both databases: a change that adds a round trip or a transaction to the
hot path fails here, not only in a bench.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django_q.models import OrmQ

from runs import ledger
from runs.approvals.permissions import start_permission_id
from runs.config.workflows import define_workflow
from runs.engine import clock, history, pauses, transitions
from runs.engine.advance import Advanced, advance
from runs.limits import overrides as limit_overrides
from runs.models import LedgerRecord, Run, RunStatus, Step
from runs.tests.fixtures import CALLS, GET, Steps
from runs.tests.transaction_count import Count, counted

pytestmark = pytest.mark.django_db(transaction=True)
POSTGRESQL = connection.vendor == "postgresql"




@pytest.fixture
def engine(engine_for, monkeypatch):
    monkeypatch.setattr(pauses, "REFRESH_SECONDS", 3600.0)  # the pauses, read once: not counted below
    pauses.forget()
    pauses.holding_start("calls")
    monkeypatch.setattr(limit_overrides, "REFRESH_SECONDS", 3600.0)  # the limits' overrides, likewise
    limit_overrides.forget()
    limit_overrides.current()
    made = engine_for(CALLS)
    yield made
    OrmQ.objects.all().delete()


def _advanced(engine: Any, n: int, run_id: str) -> tuple[Run, Count]:
    run = engine.start("calls", {"n": n}, run_id=run_id)
    with counted() as count:
        outcome = advance(run.id, worker_id="w-1", config=engine.config)
    run.refresh_from_db()
    assert outcome is Advanced.FINISHED, run.error
    return run, count


def test_each_further_step_costs_one_transaction_and_on_postgresql_one_statement(engine):
    _, one = _advanced(engine, 1, "one-step")
    _, four = _advanced(engine, 4, "four-steps")
    assert four.transactions - one.transactions == 3
    if POSTGRESQL:  # the checkpoint: lease, step and record in one statement (runs.engine.fastpath)
        assert len(four.statements) - len(one.statements) == 3


def test_a_run_advanced_at_once_costs_its_steps_a_claim_and_an_end(engine):
    run, count = _advanced(engine, 3, "three-steps")
    assert run.status == RunStatus.FINISHED and run.result == {"done": 3}
    assert Step.objects.filter(run=run).count() == 3
    if POSTGRESQL:
        # The claim (with the run's steps read in its transaction), 2 checkpoints, the last one
        # with the end (one statement: `runs.engine.effects`).
        assert count.transactions == 4, count.statements
        assert len(count.statements) == 5, count.statements
        assert "WITH lease AS" in count.statements[-1] and "called AS" in count.statements[-1]
    else:
        # The claim, the run read back, its steps read, 2 checkpoints, the last one with the end.
        assert count.transactions == 6, count.statements
        assert count.commits == 3


def test_the_end_of_a_run_is_one_statement_on_postgresql(engine):
    _, none = _advanced(engine, 0, "no-steps")
    if POSTGRESQL:
        assert none.transactions == 2  # the claim (and its steps read), the end with its record
        assert len(none.statements) == 3 and "WITH ended AS" in none.statements[2]
    assert LedgerRecord.objects.filter(run_id="no-steps", kind="run.finished").exists()


def test_the_start_is_one_transaction_with_its_task_and_its_record(engine):
    start_permission_id()  # the permission's id: read once per process, not per start
    with counted() as count:
        run = engine.start("calls", {"n": 1}, run_id="started")
    assert Run.objects.get(pk=run.id).status == RunStatus.QUEUED
    assert OrmQ.objects.count() == 1
    assert LedgerRecord.objects.filter(run_id=run.id, kind="run.started").exists()
    if POSTGRESQL:  # the starter read, the run, its record, its task and the NOTIFY: one statement
        assert (count.commits, count.autocommit, len(count.statements)) == (0, 1, 1), count.statements
        assert count.statements[0].lstrip().startswith("WITH who AS")
        return
    assert (count.commits, count.autocommit) == (1, 0)  # its checks read in the same transaction
    written = [s for s in count.statements if s.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE", "WITH"))]
    assert len(written) == 3, written  # the run, its task, its record


@pytest.mark.skipif(not POSTGRESQL, reason="the one-statement start is PostgreSQL's")
def test_a_start_the_statement_cannot_make_costs_that_statement_and_then_the_usual_transaction(engine):
    """The id taken (an idempotent repeat), or a starter allowed only on some workflows: the
    statement writes nothing, and the ORM start answers as it always did."""
    start_permission_id()
    first = engine.start("calls", {"n": 1}, run_id="again")
    with counted() as count:
        again = engine.start("calls", {"n": 1}, run_id="again")
    assert again.pk == first.pk and OrmQ.objects.count() == 1
    assert count.statements[0].lstrip().startswith("WITH who AS")
    assert (count.commits, count.autocommit) == (1, 1), count.statements
    assert LedgerRecord.objects.filter(run_id="again").count() == 1


@pytest.mark.skipif(not POSTGRESQL, reason="the claim that reads the steps is PostgreSQL's")
def test_the_claim_reads_the_run_s_recorded_steps_in_its_transaction(engine):
    run = engine.start("calls", {"n": 2}, run_id="claimed")
    assert advance(run.id, worker_id="w-1", config=engine.config) is Advanced.FINISHED
    # Back to runnable with its steps recorded, as a run woken after a wait is.
    Run.objects.filter(pk=run.id).update(status=RunStatus.QUEUED, lease_owner="", lease_until=None)
    now = clock.now()
    with counted() as count:
        claimed = transitions.claim(run_id=run.id, worker_id="w-2", versions=[run.app_version], now=now,
                                    lease_until=now + timedelta(seconds=30))
        assert claimed is not None
        loaded = history.load(claimed)  # hands over what the claim read: no query
    assert (count.commits, count.autocommit, len(count.statements)) == (1, 0, 2)  # the claim, the steps
    assert [(s.seq, s.kind, s.name, s.output) for s in loaded.steps.values()] == [
        (s.seq, s.kind, s.name, s.output) for s in Step.objects.filter(run_id=run.id).order_by("seq")]
    assert claimed.status == RunStatus.RUNNING and claimed.lease_owner == "w-2"
    # The claimed run is the row as a query reads it, every field (its JSON decoded, its times aware).
    fields = [f.attname for f in Run._meta.concrete_fields]
    assert {f: getattr(claimed, f) for f in fields} == {f: getattr(Run.objects.get(pk=run.id), f) for f in fields}
    assert not claimed._state.adding and claimed.input == {"n": 2}
    assert transitions.claimed_history(claimed) is None  # handed over once; a later load reads afresh
    assert transitions.claimed_history(Run.objects.get(pk=run.id)) is None
    # A second claim while the lease is held takes nothing.
    assert transitions.claim(run_id=run.id, worker_id="w-3", versions=[run.app_version], now=now,
                             lease_until=now) is None


def _raises_after_its_last_call(ctx: Any, input: Steps) -> dict[str, Any]:
    orders = [ctx.acme.order.get({"order_id": "1"}) for _ in range(input.n)]
    return {"one_too_many": orders[input.n]}  # the workflow's own code fails: IndexError


RAISES = define_workflow(name="raises-after", input=Steps, uses=[GET], run=_raises_after_its_last_call)


def test_a_run_whose_code_raises_after_its_last_call_ends_failed_with_the_call_recorded(engine_for, monkeypatch):
    monkeypatch.setattr(pauses, "REFRESH_SECONDS", 3600.0)
    pauses.forget()
    pauses.holding_start("raises-after")
    monkeypatch.setattr(limit_overrides, "REFRESH_SECONDS", 3600.0)
    limit_overrides.forget()
    limit_overrides.current()
    engine = engine_for(RAISES)
    run = engine.start("raises-after", {"n": 2}, run_id="raises-after")
    with counted() as count:
        outcome = advance(run.id, worker_id="w-1", config=engine.config)
    run.refresh_from_db()
    assert outcome is Advanced.FAILED
    assert run.status == RunStatus.FAILED and run.error["name"] == "IndexError", run.error
    # Both calls recorded, the last one in the transaction that ended the run, before its end.
    assert [(s.seq, s.kind) for s in Step.objects.filter(run=run).order_by("seq")] == [(1, "call"), (2, "call")]
    kinds = list(LedgerRecord.objects.filter(run_id=run.id).order_by("chain_index").values_list("kind", flat=True))
    assert kinds == ["run.started", "op.called", "op.called", "run.failed"]
    assert not ledger.verify(run.id).breaks
    assert len(engine.fake.calls) == 2
    if POSTGRESQL:  # the claim, the first checkpoint, the second with the end
        assert count.transactions == 3, count.statements
    else:
        assert count.commits == 2, count.statements
    OrmQ.objects.all().delete()
