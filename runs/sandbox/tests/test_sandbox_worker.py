"""A sandbox run on real `manage.py worker` processes, on the example company's REAL drivers (the
shop's credentials point at a port where nothing answers): it runs until it waits for finance on
one worker, which then stops; finance approves; another worker, a new process, makes the fakes
afresh from the run's books and finishes it, and the scenario's checks pass (the order read before
the suspend is the one refunded after it)."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection

from company.resources import staff as company_staff
from runs.approvals.services import decide
from runs.config.registry import set_config
from runs.config.resolution import load_config
from runs.models import Run
from runs.sandbox.models import SandboxRun
from runs.sandbox.services import checks_of, start_sandbox
from runs.sandbox.tests.conftest import COMPANY
from runs.seed import seed_declared
from runs.tests.processes import EXAMPLE_COMPANY_CREDENTIALS, Worker, database_url, worker_env

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_sandbox_run_suspends_on_one_worker_and_resumes_on_another(tmp_path: Path):
    config = load_config(COMPANY)
    set_config(config)
    try:
        seed_declared(vars(company_staff).values())
        env = worker_env(db_url=database_url(connection.settings_dict), var_dir=tmp_path / "var", version="",
                         root=COMPANY, SANOMA_FAKES="", **EXAMPLE_COMPANY_CREDENTIALS)
        run = start_sandbox(scenario="finance approves a refund", started_by="alice", config=config)
        first = Worker(env, tmp_path / "worker-1.log").start()
        try:
            first.wait_for(lambda: Run.objects.get(pk=run.id).waiting_for == "approval", within=120,
                           what="the sandbox run to wait for finance")
        finally:
            first.terminate()
        books = SandboxRun.objects.get(pk=run.id).books
        # The seed's read (`Given order 1001 exists`), then the run's, kept with the run.
        assert [c["op"] for c in books["shop"]["calls"]] == ["shop.order.get", "shop.order.get"]
        decide(run_id=run.id, decision="approve", by="finance-lead", note="fine", timeout=0)
        second = Worker(env, tmp_path / "worker-2.log").start()
        try:
            second.wait_for(lambda: Run.objects.get(pk=run.id).status == "finished", within=120,
                            what="the sandbox run to finish on the second worker")
        finally:
            second.terminate()
        run.refresh_from_db()
        row = checks_of(run, viewer="alice")
        assert row is not None and row.checks is not None
        assert (row.passed, row.failed) == (9, 0), row.checks
        shop = SandboxRun.objects.get(pk=run.id).books["shop"]
        assert [c["op"] for c in shop["calls"]] == ["shop.order.get", "shop.order.get", "shop.order.refund",
                                                    "shop.customer.notify"]
        assert shop["state"]["orders"]["1001"]["status"] == "partly_refunded"
    finally:
        set_config(None)
