"""Refunds decided at once against one daily budget: no two calls racing pass it together.

Twelve refunds of 150.00 EUR against a budget of 1,000.00 EUR a day, each advanced by its own
thread (its own database connection, as a worker of its own) released at once, with a policy that
takes 50 ms to decide so that every decision overlaps the others. Six fit (900.00); the seventh
would pass the budget. However the deciders interleave, exactly six are made and six held.
On PostgreSQL (the currency's lock row) and on SQLite (the database's write lock)."""
from __future__ import annotations

import threading

import pytest
from django.db import connections

from runs import services
from runs.engine.advance import advance
from runs.models import Approval, Run
from runs.spend.models import SpendEntry, SpendLock
from runs.spend.tests.support import BUDGET, REFUND, Slow, budget_policy, pay

pytestmark = pytest.mark.django_db(transaction=True)

RUNS = 12
CENTS = 15_000


def test_concurrent_refunds_never_pass_the_budget_together(engine_for, tmp_path):
    engine = engine_for(REFUND, connectors=[pay], policy=Slow(budget_policy(tmp_path / "p"), 0.05))
    runs = [services.start(workflow="refund", input={"order_id": str(n), "amount_cents": CENTS},
                           started_by="alice", config=engine.config) for n in range(RUNS)]
    gate = threading.Barrier(RUNS)
    errors: list[BaseException] = []

    def decide(run_id: str, n: int) -> None:
        try:
            gate.wait()
            advance(run_id, worker_id=f"worker-{n}", config=engine.config)
        except BaseException as err:  # reported below
            errors.append(err)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=decide, args=(run.id, n)) for n, run in enumerate(runs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors

    statuses = dict(Run.objects.filter(pk__in=[r.id for r in runs]).values_list("id", "status"))
    made = [run_id for run_id, status in statuses.items() if status == "finished"]
    held = [run_id for run_id, status in statuses.items() if status == "waiting"]
    refunds = engine.config.fakes["pay"].state["refunds"]
    assert len(refunds) * CENTS <= BUDGET  # the money that moved
    assert (len(made), len(held)) == (BUDGET // CENTS, RUNS - BUDGET // CENTS), statuses
    assert len(refunds) == len(made)
    assert Approval.objects.filter(run_id__in=held, title="Refund over the daily budget").count() == len(held)
    counted = sum(SpendEntry.objects.filter(state__in=("reserved", "spent")).values_list("cents", flat=True))
    assert counted == len(made) * CENTS
    assert SpendLock.objects.get(currency="EUR").decisions == RUNS
