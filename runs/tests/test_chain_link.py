"""The engine links its own checkpoints' records after the run's last one on PostgreSQL (it knows it
from the checkpoint it wrote before), and a record another process linked meanwhile still finds its
place: the checkpoint's link is refused by the chain's unique index and made again by the trigger.
The chain stays one line, with no gap and no fork, and verifies."""
from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest
from django.db import connection
from django_q.models import OrmQ

from runs import ledger, ledger_chain
from runs.config.workflows import define_workflow
from runs.engine import fastpath
from runs.engine.advance import Advanced, advance
from runs.models import LedgerRecord, Run, RunStatus
from runs.tests.fixtures import GET

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the link trigger is PostgreSQL's"),
]

OTHER_RECORD = "note-from-another-process"


def _append_from_another_process(run_id: str) -> None:
    """A record of the run appended on a connection of its own, linked by the trigger, as another
    process (an operator's decision, a cancel) does; this process is not told."""
    record = LedgerRecord(record_id=f"{run_id}:{OTHER_RECORD}", run_id=run_id, seq=0, v=1, app="other", at=1,
                          actor="carol", workflow="interleaved", kind="run.tagged", body={"by": "carol"}, group=None)
    digest = ledger_chain.content_digest(record)
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as other:
        other.execute(
            "INSERT INTO runs_ledgerrecord (record_id, run_id, seq, v, app, at, actor, workflow, kind, body, \"group\","
            " chain_index, prev_hash, hash) VALUES (%s, %s, 0, 1, 'other', 1, 'carol', 'interleaved', 'run.tagged',"
            " %s::jsonb, NULL, %s, '', %s)",
            [record.record_id, run_id, json.dumps(record.body), ledger_chain.ASK_TRIGGER, digest])


def _interleaved(ctx: Any, input: Any) -> str:
    ctx.acme.order.get({"order_id": "1"})
    ctx.acme.order.get({"order_id": "1"})  # the first call's checkpoint is written before this call
    _append_from_another_process(ctx.run_id)  # one advance, no replay: once
    ctx.acme.order.get({"order_id": "1"})  # the second's, after the other process's record
    ctx.acme.order.get({"order_id": "1"})
    return "ok"


def _plain(ctx: Any, input: Any) -> str:
    for _ in range(8):
        ctx.acme.order.get({"order_id": "1"})
    return "ok"


def _first_interleaved(ctx: Any, input: Any) -> str:
    _append_from_another_process(ctx.run_id)  # after the claim read the run's last record
    ctx.acme.order.get({"order_id": "1"})
    ctx.acme.order.get({"order_id": "1"})
    return "ok"


INTERLEAVED = define_workflow(name="interleaved", uses=[GET], run=_interleaved)
FIRST_INTERLEAVED = define_workflow(name="first-interleaved", uses=[GET], run=_first_interleaved)
PLAIN = define_workflow(name="plain", uses=[GET], run=_plain)


@pytest.fixture
def engine(engine_for):
    made = engine_for(INTERLEAVED, FIRST_INTERLEAVED, PLAIN)
    yield made
    OrmQ.objects.all().delete()


def _chain(run_id: str) -> list[LedgerRecord]:
    return list(LedgerRecord.objects.filter(run_id=run_id).order_by("chain_index"))


def _holds(run_id: str) -> list[LedgerRecord]:
    chain = _chain(run_id)
    assert [r.chain_index for r in chain] == list(range(len(chain)))
    assert [r.prev_hash for r in chain] == ["", *(r.hash for r in chain[:-1])]
    checked = ledger.verify(run_id)
    assert checked.records == len(chain) and checked.breaks == [], checked
    return chain


def test_a_run_s_checkpoints_make_one_chain_that_verifies(engine):
    run = engine.start("plain", {})
    assert advance(run.id, worker_id="w-1", config=engine.config) is Advanced.FINISHED
    chain = _holds(run.id)
    kinds = [r.kind for r in chain]
    assert kinds[0] == "run.started" and kinds[-1] == "run.finished"
    assert kinds.count("op.called") == 8


def _refusals(monkeypatch: Any) -> list[bool]:
    """Each refusal of a checkpoint's own link the engine saw (True: by the chain's unique index)."""
    refused: list[bool] = []
    original = fastpath.chain_taken

    def chain_taken(err: Any) -> bool:
        refused.append(original(err))
        return refused[-1]

    monkeypatch.setattr(fastpath, "chain_taken", chain_taken)
    return refused


def test_every_checkpoint_of_an_advance_is_linked_by_the_engine_from_the_record_the_claim_read(engine, monkeypatch):
    """The claim reads the run's last record with its steps; the first checkpoint links after it, so
    the ledger's trigger is asked for no record of the advance but the run's end when it is separate."""
    asked: list[str] = []
    original = ledger_chain.for_trigger

    def for_trigger(record: Any) -> None:
        asked.append(record.kind)
        original(record)

    monkeypatch.setattr(ledger_chain, "for_trigger", for_trigger)
    run = engine.start("plain", {})
    asked.clear()  # the start's record is the trigger's
    assert advance(run.id, worker_id="w-1", config=engine.config) is Advanced.FINISHED
    assert asked == []
    _holds(run.id)


def test_a_record_another_process_appended_before_the_first_checkpoint_keeps_its_place(engine, monkeypatch):
    refused = _refusals(monkeypatch)
    run = engine.start("first-interleaved", {})
    assert advance(run.id, worker_id="w-1", config=engine.config) is Advanced.FINISHED
    chain = _holds(run.id)
    order = [r.record_id.rsplit(":", 1)[-1] if r.kind == "run.tagged" else r.kind for r in chain]
    assert order.index(OTHER_RECORD) < order.index("op.called"), order
    assert refused == [True]  # the first checkpoint's link (after run.started) was refused, then the trigger's


def test_a_record_another_process_appended_between_two_checkpoints_keeps_its_place(engine, monkeypatch):
    refused = _refusals(monkeypatch)
    run = engine.start("interleaved", {})
    assert advance(run.id, worker_id="w-1", config=engine.config) is Advanced.FINISHED
    assert Run.objects.get(pk=run.id).status == RunStatus.FINISHED
    chain = _holds(run.id)
    order = [r.record_id.rsplit(":", 1)[-1] if r.kind == "run.tagged" else r.kind for r in chain]
    calls = [i for i, kind in enumerate(order) if kind == "op.called"]
    other = order.index(OTHER_RECORD)
    assert len(calls) == 4
    # Written after the second call returned, before its checkpoint (held while the code ran).
    assert calls[0] < other < calls[1], order
    # The second checkpoint's own link (after the first's record) was refused, then the trigger linked it.
    assert refused == [True]

