"""`sanoma_calls_in_doubt_total`: a call found in doubt after its worker died is counted once, as it
is settled (here by an operator), however many advances find it waiting meanwhile."""
from __future__ import annotations

from prometheus_client import REGISTRY

from runs import recovery
from runs.models import RunStatus
from runs.tests.test_in_doubt import crash_after_the_vendor_answered, engine, ops  # noqa: F401 (fixtures)


def in_doubt() -> float:
    labels = {"connector": "bank", "operation": "bank.payment.create"}
    return REGISTRY.get_sample_value("sanoma_calls_in_doubt_total", labels) or 0.0


def test_a_call_in_doubt_is_counted_once_as_it_is_settled(engine, ops):  # noqa: F811
    before = in_doubt()
    run = crash_after_the_vendor_answered(engine, "pay")
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "in_doubt")
    assert in_doubt() == before  # waiting for an operator: sanoma_runs_waiting{waiting_for="in_doubt"} shows it
    recovery.resolve_in_doubt(run_id=run.id, happened=True, output={"payment_id": "pay_1"}, by="ops")
    engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED
    assert in_doubt() - before == 1
