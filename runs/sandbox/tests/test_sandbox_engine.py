"""Sandbox runs in the engine: seeded from a scenario's Given steps, advanced on fakes only (a
config on real drivers included), their fakes' books kept with the run across suspends, checked
against the scenario's Then steps once ended; a vendor with no fake fails the call clearly."""
from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from connectors import define_connector, op
from connectors.drivers import define_driver
from connectors.errors import InvalidInput
from runs import services
from runs.approvals.announce_models import ApprovalAnnouncement
from runs.approvals.services import decide
from runs.authoring import define_workflow
from runs.engine.drain import drain
from runs.models import LedgerRecord, Run
from runs.sandbox import services as sandbox
from runs.sandbox.fakes import NO_FAKE
from runs.sandbox.models import SandboxRun
from runs.sandbox.scenarios import reader
from runs.spend import ledger_check
from runs.spend.models import SpendEntry

pytestmark = pytest.mark.django_db

APPROVES = "finance approves a refund"
BUDGET = "the refund that would pass the budget is held for finance"


def test_a_sandbox_run_of_a_scenario_runs_on_fakes_seeded_by_its_givens_and_passes_its_checks(company):
    run = sandbox.start_sandbox(scenario=APPROVES, workflow="refund", started_by="alice")
    assert run.id.startswith("sandbox-refund-")
    row = SandboxRun.objects.get(pk=run.id)
    assert (row.scenario, row.file) == (APPROVES, "scenarios/refund.feature")
    assert row.books["shop"]["state"]["orders"]["1001"]["status"] == "paid"  # `Given order 1001 exists`
    assert run.input == {"order_id": "1001", "amount_cents": 1500, "reason": "damaged in transit"}
    drain(company)
    run.refresh_from_db()
    assert (run.status, run.waiting_for) == ("waiting", "approval")
    # The company announces approvals in Slack; a sandbox run's stay out of the channel.
    assert company.announce_approvals is not None and not ApprovalAnnouncement.objects.filter(run_id=run.id).exists()
    waiting = sandbox.checks_of(run, viewer="alice")
    assert waiting is not None and waiting.checks is None  # not ended: nothing checked yet
    decide(run_id=run.id, decision="approve", by="finance-lead", note="fine", timeout=0)
    drain(company)
    run.refresh_from_db()
    assert run.status == "finished", run.error
    row = _checked(run)
    assert [c["ok"] for c in row.checks] == [True] * len(row.checks), row.checks
    assert len(row.checks) == 9
    assert row.checks[0]["step"] == "Then order 1001 was refunded 1500"
    # Marked in the ledger: every record the engine wrote for it says so.
    calls = LedgerRecord.objects.filter(run_id=run.id, kind="op.called")
    assert calls.count() == 4 and all(r.body.get("sandbox") is True for r in calls)
    # The shop's state moved in the run's books, and nowhere else.
    assert SandboxRun.objects.get(pk=run.id).books["shop"]["state"]["orders"]["1001"]["status"] == "partly_refunded"


def _checked(run: Run) -> Any:
    row = sandbox.checks_of(run, viewer="alice")
    assert row is not None and row.checks is not None
    return row


def test_a_check_that_fails_says_why(company):
    # Seeded by "finance rejects a refund" (no Given: order 1002 is in the shop's initial state), approved instead.
    run = sandbox.start_sandbox(scenario="finance rejects a refund", started_by="alice")
    drain(company)
    decide(run_id=run.id, decision="approve", by="finance-lead", timeout=0)
    drain(company)
    run.refresh_from_db()
    row = _checked(run)
    by_step = {c["step"]: c for c in row.checks}
    outcome = by_step['Then the run fails with "approval_rejected"']
    assert not outcome["ok"] and "The run finished" in outcome["detail"]
    assert not by_step["And shop.order.refund was not called"]["ok"]
    assert (row.failed, row.passed) == (6, 0)  # approved instead of rejected: every check fails


def test_the_fakes_survive_a_suspend_and_the_checks_count_calls_from_the_seed(company):
    # The shop fails once (a fault queued by the scenario) and its read is tried again: the fault
    # is in the books when the run parks for its approval, and the count starts after the seeds.
    run = sandbox.start_sandbox(scenario="the shop fails once while the order is read, and the read is tried again",
                                started_by="alice")
    assert SandboxRun.objects.get(pk=run.id).books["shop"]["faults"] == {"shop.order.get": [{"kind": "fail"}]}
    drain(company, worker_id="worker-1")
    run.refresh_from_db()
    assert run.waiting_for == "approval"
    assert SandboxRun.objects.get(pk=run.id).books["shop"]["faults"] == {}
    decide(run_id=run.id, decision="approve", by="finance-lead", timeout=0)
    drain(company, worker_id="worker-2")  # another worker, fakes made afresh from the books
    run.refresh_from_db()
    assert run.status == "finished", run.error
    row = _checked(run)
    assert all(c["ok"] for c in row.checks), row.checks


def test_an_unknown_scenario_or_one_of_another_workflow_is_refused_naming_the_closest(company):
    with pytest.raises(Exception) as err:
        sandbox.start_sandbox(scenario="no such scenario", workflow="refund", started_by="alice")
    assert 'No scenario "no such scenario" of workflow refund.' in str(err.value)
    assert "Did you mean" not in str(err.value) and "manage.py sandbox --workflow refund" in str(err.value)
    with pytest.raises(Exception) as err:
        sandbox.start_sandbox(scenario="Finance  rejects refund", workflow="refund", started_by="alice")
    assert 'Did you mean "finance rejects a refund"' in str(err.value)
    assert str(err.value).count('"') <= 2 + 2 * 3  # the name typed, and at most three suggested
    with pytest.raises(Exception) as err:
        sandbox.start_sandbox(scenario=APPROVES, workflow="ship", started_by="alice")
    assert "runs workflow refund, not ship" in str(err.value)
    assert not Run.objects.exists() and not SandboxRun.objects.exists()


def test_a_starter_who_may_not_start_the_workflow_is_refused_and_nothing_is_written(company):
    from runs.seed import seed_person

    seed_person(username="nobody")
    with pytest.raises(Exception) as err:
        sandbox.start_sandbox(scenario=APPROVES, started_by="nobody")
    assert getattr(err.value, "code", None) == "permission_denied"
    assert not Run.objects.exists() and not SandboxRun.objects.exists()


# ---- a vendor with no fake --------------------------------------------------------------------


class Ping(BaseModel):
    text: str


REAL_CALLS: list[str] = []
bare = define_connector("bare", {"ping": {"echo": op(effect="read", input=Ping, output=Ping, idempotent=True)}})


def _ping(payload: Ping, context) -> dict:
    REAL_CALLS.append(payload.text)
    return {"text": payload.text}


def _ping_bare(ctx, input: Ping):
    return ctx.bare.ping.echo({"text": input.text}).model_dump()


ping_bare = define_workflow(name="ping-bare", input=Ping, uses=[bare.operations["bare.ping.echo"]], run=_ping_bare)


def test_a_sandbox_run_whose_vendor_has_no_fake_fails_clearly_and_never_calls_the_driver(engine_for):
    from connectors import with_setup

    driver = with_setup(bare, driver=lambda: define_driver(bare, {"ping": {"echo": _ping}}))
    engine = engine_for(ping_bare, connectors=[driver])
    REAL_CALLS.clear()
    run = services.start(workflow="ping-bare", input={"text": "hi"}, started_by="alice", run_id="sandbox-ping-1")
    SandboxRun.objects.create(run=run, scenario="(made by the test)")
    engine.drain()
    run.refresh_from_db()
    assert run.status == "failed" and run.error is not None
    assert run.error.get("code") == NO_FAKE, run.error
    assert "bare.ping.echo cannot be called in a sandbox run: vendor bare has no fake" in run.error["message"]
    assert REAL_CALLS == []
    # The same workflow, not a sandbox, reaches the driver.
    plain = engine.run("ping-bare", {"text": "real"})
    assert plain.status == "finished" and REAL_CALLS == ["real"]


# ---- a child run of a sandbox run ---------------------------------------------------------------


KID_FEATURE = """Feature: Parent and kid
  Scenario: the kid reads an order
    When sb-parent runs
    Then acme.order.get was called
    And the run succeeds
"""


class Nothing(BaseModel):
    pass


def _kid(ctx, input: Nothing):
    return ctx.acme.order.get({"order_id": "1"}).model_dump()


def _parent(ctx, input: Nothing):
    kid = ctx.start_run("sb-kid", {}, run_id="a-kid-of-its-own")  # an id without the sandbox prefix
    return ctx.wait_run(kid)


def test_a_child_run_of_a_sandbox_run_is_a_sandbox_run_even_with_an_id_of_its_own(engine_for, tmp_path):
    from runs.tests.fixtures import GET

    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "kid.feature").write_text(KID_FEATURE, encoding="utf-8")
    kid = define_workflow(name="sb-kid", input=Nothing, uses=[GET], run=_kid)
    parent = define_workflow(name="sb-parent", input=Nothing, uses=["start_run", "wait_run"], run=_parent)
    engine = engine_for(parent, kid, root=tmp_path)
    run = sandbox.start_sandbox(scenario="the kid reads an order", started_by="alice", config=engine.config)
    engine.drain()
    run.refresh_from_db()
    assert run.status == "finished", run.error
    assert SandboxRun.objects.filter(pk="a-kid-of-its-own").exists()  # adopted when it was started
    assert engine.fake.calls == []  # the config's own driver (here its fake) was never called
    kid_books = SandboxRun.objects.get(pk="a-kid-of-its-own").books
    assert [c["op"] for c in kid_books["acme"]["calls"]] == ["acme.order.get"]
    assert all(c["ok"] for c in _checked(run).checks), _checked(run).checks
    kid_run = Run.objects.get(pk="a-kid-of-its-own")
    kid_row = sandbox.checks_of(kid_run, viewer="alice")
    assert kid_row is not None and kid_row.checks is None  # the scenario is its parent's: checked there


def test_a_rerun_of_a_failed_sandbox_run_is_a_sandbox_run_on_its_fakes(company):
    from runs import recovery
    from runs.seed import seed_person

    # The shop loses its reply to the refund: the sandbox run fails, the shop's fake holding one refund.
    run = sandbox.start_sandbox(scenario="the shop's reply to the refund is lost: the run stops and the money "
                                         "moved once", started_by="alice")
    drain(company)
    decide(run_id=run.id, decision="approve", by="finance-lead", timeout=0)
    drain(company)
    run.refresh_from_db()
    assert run.status == "failed"
    assert all(c["ok"] for c in _checked(run).checks), _checked(run).checks
    seed_person(username="olga", perms=("runs.view_any_run", "runs.operate_runs", "runs.rerun_runs",
                                        "runs.start_workflow"))
    again = recovery.rerun(run_id=run.id, by="olga")
    assert again.id == f"{run.id}~1"
    drain(company)  # on the real drivers' config: a call that reached the shop's driver would fail
    again.refresh_from_db()
    row = SandboxRun.objects.get(pk=again.id)
    assert row.scenario == "the shop's reply to the refund is lost: the run stops and the money moved once"
    assert again.status == "waiting" and again.waiting_for == "approval", (again.status, again.error)
    # Its fakes are its source's as they were: the order already read and the refund already made.
    assert len(row.books["shop"]["state"]["refunds"]) == 1


def test_a_sandbox_run_counts_no_real_spend_and_cannot_seed_it(company):
    # A refund in the sandbox is judged by the company's real sums but reserves nothing in them.
    run = sandbox.start_sandbox(scenario=APPROVES, workflow="refund", started_by="alice")
    drain(company)
    decide(run_id=run.id, decision="approve", by="finance-lead", timeout=0)
    drain(company)
    run.refresh_from_db()
    assert run.status == "finished", run.error
    assert not SpendEntry.objects.exists()
    # Its refund's ledger record says sandbox: checking (or rebuilding) the spend from the ledger counts none.
    report = ledger_check.check(ops=company.ops, fix=True)
    assert (report.calls, report.differences) == (0, []) and not SpendEntry.objects.exists()
    # A scenario whose Given seeds the day's spend is refused: the spend table is the company's.
    with pytest.raises(InvalidInput) as refused:
        sandbox.start_sandbox(scenario=BUDGET, started_by="alice")
    # Said once, the step placed from the config root, in the words the scenario's listing gives up front.
    said = str(refused.value)
    assert said == ("The scenario's step 'Given shop.order.refund has spent 90000 today' (scenarios/budget.feature:38) "
                    "cannot seed a sandbox run: the spend it seeds would count as the company's real "
                    "shop.order.refund spend today")
    [listed] = [s for s in reader().of_workflow(company, "refund") if s.name == BUDGET]
    assert listed.problem == said
    assert all(not s.problem for s in reader().of_workflow(company, "refund") if s.file != "scenarios/budget.feature")
    assert not SpendEntry.objects.exists() and not SandboxRun.objects.exclude(pk=run.id).exists()
