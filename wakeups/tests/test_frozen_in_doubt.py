"""A worker frozen past its lease with a call in flight, at a vendor that ignores keys: the worker
that takes the run over does not ask the reconcile read until that call can no longer land.

Real `manage.py worker` processes (a django-q2 cluster plus the sweep each). The first records the
intent of `tally.entry.pay` (a vendor that takes every call as a new effect, with a reconcile read
`tally.entry.find`) and sends it; the fake lands that first attempt late. While it is in flight the
first worker's whole process group is frozen (SIGSTOP) past its lease: its heartbeat stops, the
second worker's sweep takes the run over. The lease fences the frozen worker's database writes, not
its vendor call: woken again (SIGCONT), its call lands, after the takeover. The second worker must
keep the run in doubt until the attempt's deadline (the call's timeout from its intent), then ask
the vendor, learn it happened, and go on with that reply: exactly one effect at the vendor.

Runs on the test's own database (`transaction=True`), on SQLite and PostgreSQL, as the other worker
tests do. The waits are bounded only to turn a hang into a failure.
"""
from __future__ import annotations

import os
import signal
from datetime import datetime
from pathlib import Path

import pytest
from django.db import connection

from runs import services
from runs.config.resolution import load_config
from runs.engine import clock
from runs.models import LedgerRecord, Run, RunStatus
from runs.testing import make_user
from wakeups.tests.worker_company.harness import ROOT, Worker, database_url, worker_env
from wakeups.tests.worker_company.tally import PAY_TIMEOUT_SECONDS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.process]

STARTER = "freeze-tester"
RUN_ID = "frozen-1"
STALL_SECONDS = 60.0
# The first attempt lands this long after it was sent: after the takeover (a 3 s lease), well
# before its deadline (PAY_TIMEOUT_SECONDS).
LANDS_AFTER_MS = 5000


def _intents() -> list[LedgerRecord]:
    return list(LedgerRecord.objects.filter(run_id=RUN_ID, kind="op.intent").order_by("id"))


def _run() -> Run:
    return Run.objects.get(pk=RUN_ID)


def test_a_reconcile_waits_until_a_frozen_workers_call_can_no_longer_land(tmp_path: Path) -> None:
    var = tmp_path / "var"
    (var / "fakes").mkdir(parents=True)
    config = load_config(ROOT, fakes="instance", fake_dir=var / "fakes", app_version="frozen")
    fake = config.fakes["tally"]
    make_user(STARTER, perms=["runs.start_workflow"])
    env = worker_env(db_url=database_url(connection.settings_dict), var_dir=var, version="frozen",
                     TALLY_FIRST_PAY_LANDS_AFTER_MS=LANDS_AFTER_MS)
    first = Worker(env, tmp_path / "first.log")
    second = Worker(env, tmp_path / "second.log")
    frozen = False
    try:
        first.start()
        services.start(workflow="pay-once", input={}, started_by=STARTER, run_id=RUN_ID, config=config)
        first.wait_for(lambda: _intents(), within=STALL_SECONDS, what="the first worker to send the payment")
        first_owner = _run().lease_owner
        assert first.pgid is not None
        os.killpg(first.pgid, signal.SIGSTOP)  # frozen with the payment in flight
        frozen = True
        assert not fake.state["effects"]  # not landed yet
        second.start()
        # The lease runs out; the second worker's sweep takes the run over and handles the doubt
        # (the code before the fix reconciled at once and sent a second attempt).
        second.wait_for(lambda: _run().lease_owner != first_owner and (
            _run().waiting_for == "in_doubt" or len(_intents()) > 1), within=STALL_SECONDS,
            what="the second worker to take the run over")
        os.killpg(first.pgid, signal.SIGCONT)  # the frozen worker's call goes on and lands, late
        frozen = False
        second.wait_for(lambda: any(e["attempt"] == 1 for e in fake.state["effects"]), within=STALL_SECONDS,
                        what="the first attempt to land at the vendor")
        first.kill()
        second.wait_for(lambda: _run().status in (RunStatus.FINISHED, RunStatus.FAILED), within=STALL_SECONDS,
                        what="the run to end")
        assert second.terminate(within=STALL_SECONDS) == 0, second.describe()
    except BaseException:
        print(first.describe(), second.describe())
        raise
    finally:
        if frozen and first.pgid is not None:
            os.killpg(first.pgid, signal.SIGCONT)
        first.cleanup()
        second.cleanup()

    effects = fake.state["effects"]
    assert len(effects) == 1, effects  # one payment, though two workers handled the call
    [effect] = effects
    assert effect["attempt"] == 1 and effect["key"] == f"{RUN_ID}:1"
    run = _run()
    assert (run.status, run.result) == (RunStatus.FINISHED, {"entry": effect["entry_id"]}), run.error
    [intent] = _intents()  # never sent a second time
    deadline = intent.body["deadline"]
    assert deadline - intent.at == pytest.approx(PAY_TIMEOUT_SECONDS * 1000, abs=100)
    [resolved] = LedgerRecord.objects.filter(run_id=RUN_ID, kind="op.resolved")
    assert (resolved.body["happened"], resolved.body["by"]) == (True, "reconcile")
    # The vendor was asked only once the first attempt's deadline had passed.
    [find] = [c for c in fake.calls if c["op"] == "tally.entry.find"]
    assert clock.to_ms(datetime.fromisoformat(find["at"].replace("Z", "+00:00"))) >= deadline
    [called] = LedgerRecord.objects.filter(run_id=RUN_ID, kind="op.called")
    assert called.body["resolved_by"] == "reconcile" and called.body["output"]["entry_id"] == effect["entry_id"]
