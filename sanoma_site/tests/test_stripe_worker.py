"""Stripe's real driver under `manage.py worker` as a real process, against the local Stripe server:
a 429 with `Retry-After` is waited out durably (the run waits for its next try's time holding no
lease, and the worker's sweep resumes it), and a refund whose answer was lost is one refund."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection

from connectors.vendors.stripe.tests.stripe_server import API_KEY, StripeServer
from runs import selectors, services
from runs.config.resolution import load_config
from runs.engine import clock
from runs.models import Run, RunStatus
from runs.testing import make_user
from runs.tests.processes import Worker, database_url, worker_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.process]

ROOT = Path(__file__).resolve().parent / "stripe_company"
PATIENCE = 60.0
RETRY_AFTER = 4  # seconds: past what the engine sleeps out in a thread, so the wait is durable


@pytest.fixture
def site(tmp_path):
    with StripeServer() as server:
        make_user("stripe-tester", perms=["runs.start_workflow"])
        config = load_config(ROOT, app_version="v1")
        env = worker_env(db_url=database_url(connection.settings_dict), var_dir=tmp_path / "var", version="v1",
                         root=ROOT, SANOMA_FAKES="", STRIPE_API_KEY=API_KEY, STRIPE_API_BASE=server.url)
        worker = Worker(env, tmp_path / "worker.log")
        try:
            yield server, config, worker
        finally:
            worker.cleanup()


def records(run_id: str, kind: str) -> list[dict]:
    return [r for r in selectors.ledger_of(run_id=run_id) if r["type"] == kind]


def test_a_429_is_waited_out_durably_and_a_lost_answer_is_one_refund(site):
    server, config, worker = site
    limited, lost = server.pay(4500), server.pay(3000)
    server.rate_limit(retry_after=RETRY_AFTER, path=f"/v1/payment_intents/{limited}")
    server.lose_answer("/v1/refunds")
    worker.start()
    services.start(workflow="stripe-refund", input={"payment_intent": lost, "amount": 700},
                   started_by="stripe-tester", run_id="lost-1", config=config)
    worker.wait_for(lambda: Run.objects.get(id="lost-1").status == RunStatus.FINISHED, within=PATIENCE,
                    what="the refund whose answer was lost to finish")
    assert len(server.refunds_of(lost)) == 1
    keys = [r.header("Idempotency-Key") for r in server.requests_to("POST", "/v1/refunds")]
    assert keys == ["lost-1:1", "lost-1:1"], keys

    services.start(workflow="stripe-refund", input={"payment_intent": limited, "amount": 500},
                   started_by="stripe-tester", run_id="limited-1", config=config)
    waiting = worker.wait_for(lambda: Run.objects.filter(id="limited-1", status=RunStatus.WAITING,
                                                         waiting_for="retry").first(),
                              within=PATIENCE, what="the rate-limited run to wait for its next try")
    assert waiting.lease_owner == ""  # no worker holds it while it waits
    [failed] = records("limited-1", "op.attempt_failed")
    assert (failed["error"]["status"], failed["wait_ms"]) == (429, RETRY_AFTER * 1000)
    assert clock.to_ms(waiting.wake_at) == failed["next_at"]
    done = worker.wait_for(lambda: Run.objects.filter(id="limited-1", status=RunStatus.FINISHED).first(),
                           within=PATIENCE, what="the rate-limited run to finish")
    assert records("limited-1", "op.called")[0]["attempt"] == 2
    gets = server.requests_to("GET", f"/v1/payment_intents/{limited}")
    assert len(gets) == 2 and gets[1].at - gets[0].at >= RETRY_AFTER - 0.1
    assert len(server.refunds_of(limited)) == 1 and done.result == {"refund": server.refunds_of(limited)[0]["id"],
                                                                     "amount": 500}
    assert worker.terminate() == 0, worker.describe()
