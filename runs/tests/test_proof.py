"""The proof: a parked run replayed dry over its record on new code migrates, or stays pinned
naming why. Runs park on one config (the old code) through the real engine; the proof runs on
another (the new code), and nothing is written or called while it does.
"""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from pydantic import BaseModel

from runs import services
from runs.authoring import define_workflow
from runs.engine import clock, faults, transitions
from runs.engine.faults import FaultPoint
from runs.engine.proof import parked_runs, prove, prove_recorded, prove_runs
from runs.engine.recorded import Recorded, load_records
from runs.models import Approval, LedgerRecord, Run, RunStatus, Step
from runs.policies import allow, approve, define_policy
from runs.tests.bank_vendor import bank_setup
from runs.tests.fixtures import GET, REFUND, SEND

bank = bank_setup("bank")
PAY = bank.op("bank.payment.create")


def hold_refunds(call):
    return approve("bob") if call.op["id"] == REFUND.id else allow()


HOLD = define_policy(hold_refunds, version="v1")


# ---- each way a run parks, and the same workflow with a step appended after that point ----------

def on_sleep(ctx, input):
    ctx.acme.order.get({"order_id": "1"})
    ctx.sleep(hours=1)


def on_sleep_appended(ctx, input):
    ctx.acme.order.get({"order_id": "1"})
    ctx.sleep(hours=1)
    ctx.acme.mail.send({"to": "a", "text": "woke"})


def on_message(ctx, input):
    ctx.acme.order.get({"order_id": "1"})
    ctx.wait_message("shipped")


def on_message_appended(ctx, input):
    ctx.acme.order.get({"order_id": "1"})
    ctx.wait_message("shipped")
    ctx.acme.mail.send({"to": "a", "text": "shipped"})


def on_approval(ctx, input):
    ctx.acme.order.get({"order_id": "1"})
    ctx.approval("Ship it?", approver="bob")


def on_approval_appended(ctx, input):
    ctx.acme.order.get({"order_id": "1"})
    ctx.approval("Ship it?", approver="bob")
    ctx.acme.mail.send({"to": "a", "text": "approved"})


def on_hold(ctx, input):
    ctx.acme.order.get({"order_id": "1"})
    ctx.acme.order.refund({"order_id": "1", "amount": 10})


def on_hold_appended(ctx, input):
    ctx.acme.order.get({"order_id": "1"})
    ctx.acme.order.refund({"order_id": "1", "amount": 10})
    ctx.acme.mail.send({"to": "a", "text": "refunded"})


def on_doubt(ctx, input):
    ctx.bank.payment.create({"order": "o1", "cents": 500})


def on_doubt_appended(ctx, input):
    ctx.bank.payment.create({"order": "o1", "cents": 500})
    ctx.acme.mail.send({"to": "a", "text": "paid"})


def on_child(ctx, input):
    child = ctx.start_run("child")
    ctx.wait_run(child)


def on_child_appended(ctx, input):
    child = ctx.start_run("child")
    ctx.wait_run(child)
    ctx.acme.mail.send({"to": "a", "text": "child done"})


def child_body(ctx, input):
    ctx.wait_message("go")


USES = [GET, SEND, REFUND, PAY, "sleep", "wait_message", "approval", "start_run", "wait_run"]


def flow(body):
    return define_workflow(name="parks", uses=USES, run=body)


CHILD = define_workflow(name="child", uses=["wait_message"], run=child_body)
KINDS = {
    "sleep": (on_sleep, on_sleep_appended, "sleep"),
    "message": (on_message, on_message_appended, "message"),
    "approval": (on_approval, on_approval_appended, "approval"),
    "held": (on_hold, on_hold_appended, "approval"),
    "in doubt": (on_doubt, on_doubt_appended, "in_doubt"),
    "child": (on_child, on_child_appended, "run"),
}


class Killed(BaseException):
    """The worker died."""


def park(engine, kind: str) -> Run:
    """A run of `parks` on the engine's code, parked the way `kind` parks."""
    if kind == "in doubt":
        faults.arm(FaultPoint.AFTER_DRIVER_CALL, Killed())
        run = engine.start("parks")
        with pytest.raises(Killed):
            engine.drain()
        faults.clear()
        run.refresh_from_db()
        assert transitions.take_over(run_id=run.id, owner=run.lease_owner, now=clock.now() + timedelta(minutes=5))
    else:
        run = engine.start("parks")
    engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING, (kind, run.status, run.error)
    assert run.waiting_for == KINDS[kind][2]
    return run


@pytest.fixture
def code(engine_for):
    """An engine on a version of the company's code: `code(body)` with the `parks` workflow's body."""

    def build(body, *extra, policy=HOLD, **options):
        return engine_for(flow(body), CHILD, *extra, policy=policy, connectors=[_acme(), bank], **options)

    yield build
    faults.clear()


def _acme():
    from runs.tests.fixtures import acme
    return acme


def nothing_written(before: dict[str, int]) -> None:
    assert counts() == before


def counts() -> dict[str, int]:
    return {"steps": Step.objects.count(), "records": LedgerRecord.objects.count(),
            "approvals": Approval.objects.count(), "runs": Run.objects.count()}


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_parked_kind_migrates_on_unchanged_code_and_on_an_appended_step(code, kind):
    old, appended, _ = KINDS[kind]
    engine = code(old)
    run = park(engine, kind)
    calls = len(engine.fake.calls) + len(engine.config.fakes["bank"].calls)
    before = counts()
    for body in (old, appended):
        new = code(body)
        proof = prove(run=run, config=new.config)
        assert (proof.outcome, proof.reason, proof.step) == ("migrates", "", None), (kind, proof)
        assert proof.run_id == run.id and proof.workflow == "parks"
        assert proof.from_version == run.app_version and proof.to_version == new.config.version
        assert proof.steps_replayed == len(Step.objects.filter(run=run))
        # The same record written as a fixture and read back proves the same.
        [recorded] = load_records([run])
        fixture = Recorded.from_json(json.loads(json.dumps(recorded.as_json(), default=str)))
        assert prove_recorded(recorded=fixture, config=new.config) == proof
    nothing_written(before)
    assert len(engine.fake.calls) + len(engine.config.fakes["bank"].calls) == calls  # no vendor was called


# ---- what pins, and the sentence that says why ----------------------------------------------------

def inserted_before_the_wait(ctx, input):
    ctx.acme.order.get({"order_id": "1"})
    ctx.acme.mail.send({"to": "a", "text": "inserted"})
    ctx.wait_message("shipped")


def another_op_first(ctx, input):
    ctx.acme.order.refund({"order_id": "1", "amount": 5})
    ctx.wait_message("shipped")


def ends_early(ctx, input):
    return "done"


def waits_elsewhere(ctx, input):
    ctx.wait_message("paid")


def fails_first(ctx, input):
    return int("a bug")


@pytest.mark.parametrize(("body", "step", "says"), [
    (inserted_before_the_wait, 2, "step 2 was wait shipped, now call acme.mail.send"),
    (another_op_first, 1, "step 1 was call acme.order.get, now call acme.order.refund"),
    (ends_early, 1, "the new code ends before step 3"),
    (waits_elsewhere, 1, "step 1 was call acme.order.get, now wait paid"),
    (fails_first, 1, "the new code fails before step 3: invalid literal for int() with base 10: 'a bug'"),
])
def test_a_changed_path_before_the_parked_point_pins_naming_the_step(code, body, step, says):
    run = park(code(on_message), "message")
    before = counts()
    proof = prove(run=run, config=code(body).config)
    assert (proof.outcome, proof.reason, proof.step) == ("pinned", says, step)
    nothing_written(before)


def changed_input(ctx, input: NeedsOrder):
    ctx.acme.order.get({"order_id": "1"})
    ctx.wait_message("shipped")


class NeedsOrder(BaseModel):
    order: str


def test_a_removed_workflow_and_a_changed_input_schema_pin_with_the_reason(code, engine_for):
    run = park(code(on_message), "message")
    gone = engine_for(CHILD, connectors=[_acme(), bank])
    proof = prove(run=run, config=gone.config)
    assert (proof.outcome, proof.reason, proof.step) == ("pinned", "workflow parks is not in the new code", None)
    schema = engine_for(define_workflow(name="parks", input=NeedsOrder, uses=USES, run=changed_input), CHILD,
                        connectors=[_acme(), bank])
    proof = prove(run=run, config=schema.config)
    assert proof.outcome == "pinned" and proof.step is None
    assert proof.reason.startswith("the run's input no longer matches parks's schema: ")
    assert "order" in proof.reason


def test_a_held_call_whose_operation_changed_pins(code):
    run = park(code(on_hold), "held")

    def refund_became_mail(ctx, input):
        ctx.acme.order.get({"order_id": "1"})
        ctx.acme.mail.send({"to": "a", "text": "no refund"})

    proof = prove(run=run, config=code(refund_became_mail).config)
    assert (proof.outcome, proof.step) == ("pinned", 2)
    assert proof.reason == "step 2 was call acme.order.refund, now call acme.mail.send"


def test_an_approval_replaced_by_a_call_pins(code):
    run = park(code(on_approval), "approval")
    proof = prove(run=run, config=code(on_hold).config)
    assert (proof.outcome, proof.step) == ("pinned", 2)
    assert proof.reason == "step 2 was approval Ship it?, now call acme.order.refund"


# ---- ctx.all ---------------------------------------------------------------------------------------

def fan_out(ctx, input):
    ctx.all([lambda: ctx.acme.order.get({"order_id": "1"}),
             lambda: ctx.acme.order.refund({"order_id": "1", "amount": 10})])


def fan_out_wider(ctx, input):
    ctx.all([lambda: ctx.acme.order.get({"order_id": "1"}),
             lambda: ctx.acme.order.refund({"order_id": "1", "amount": 10}),
             lambda: ctx.acme.mail.send({"to": "a", "text": "also"})])


def fan_out_gone(ctx, input):
    ctx.acme.order.get({"order_id": "1"})
    ctx.acme.order.refund({"order_id": "1", "amount": 10})


def test_a_changed_ctx_all_is_refused(engine_for):
    def build(body):
        return engine_for(define_workflow(name="parks", uses=[GET, REFUND, SEND, "all"], run=body),
                          policy=HOLD, connectors=[_acme()])

    engine = build(fan_out)
    run = engine.run("parks")
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "approval")  # held inside the fan-out
    assert prove(run=run, config=build(fan_out).config).outcome == "migrates"
    wider = prove(run=run, config=build(fan_out_wider).config)
    assert (wider.outcome, wider.step) == ("pinned", 1)
    assert wider.reason == ("step 1 was call acme.order.get (ctx.all member 1 of 2), "
                            "now call acme.order.get (ctx.all member 1 of 3)")
    gone = prove(run=run, config=build(fan_out_gone).config)
    assert (gone.outcome, gone.step) == ("pinned", 1)
    assert gone.reason == "step 1 was call acme.order.get (ctx.all member 1 of 2), now call acme.order.get"


# ---- many runs at once --------------------------------------------------------------------------

def test_prove_runs_reads_the_records_in_a_few_queries_and_parked_runs_finds_the_unfinished(code):
    engine = code(on_message)
    parked = [park(engine, "message") for _ in range(6)]
    held = park(code(on_hold), "held")
    done = code(ends_early).run("parks")
    assert done.status == RunStatus.FINISHED
    queued = services.start(workflow="parks", input={}, started_by="alice", config=engine.config)

    found = list(parked_runs())
    assert {r.id for r in found} == {*(r.id for r in parked), held.id, queued.id}
    assert list(parked_runs(exclude_versions=[held.app_version, queued.app_version])) == []

    new = code(on_message_appended)
    with CaptureQueriesContext(connection) as queries:
        proofs = prove_runs(config=new.config, runs=found)
    assert len(queries) <= 6, [q["sql"] for q in queries]
    outcomes = {p.run_id: (p.outcome, p.reason) for p in proofs}
    assert all(outcomes[r.id] == ("migrates", "") for r in parked)
    assert outcomes[queued.id] == ("migrates", "")  # nothing recorded yet: any code goes on
    assert outcomes[held.id] == ("pinned", "step 2 was call acme.order.refund, now wait shipped")


def test_a_call_waiting_for_its_next_try_is_its_parked_point(code):
    from connectors import DriverError

    engine = code(on_message)
    engine.fake.fail_next(GET.id, DriverError("the shop is down", retryable=True, retry_after=600))
    run = engine.start("parks")
    engine.drain()
    run.refresh_from_db()
    assert (run.status, run.waiting_for, Step.objects.filter(run=run).count()) == (RunStatus.WAITING, "retry", 0)
    assert prove(run=run, config=code(on_message_appended).config).outcome == "migrates"
    moved = prove(run=run, config=code(another_op_first).config)
    assert (moved.outcome, moved.step) == ("pinned", 1)
    assert moved.reason == "step 1 was call acme.order.get, now call acme.order.refund"


def test_a_held_call_decided_and_queued_again_is_parked_on_its_call(code):
    from runs.approvals import services as approvals
    from runs.testing import make_user

    engine = code(on_hold)
    run = park(engine, "held")
    make_user("bob")
    approvals.decide(run_id=run.id, approval_id="approval-1", decision="approve", by="bob", timeout=0)
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED
    assert prove(run=run, config=code(on_hold_appended).config).outcome == "migrates"


def test_code_that_fails_at_the_parked_point_pins_a_parked_run_and_proves_an_ended_one(code):
    engine = code(on_message)
    queued = services.start(workflow="parks", input={}, started_by="alice", config=engine.config)
    failing = code(fails_first).config
    proof = prove(run=queued, config=failing)
    assert (proof.outcome, proof.step) == ("pinned", 1)
    assert proof.reason == "the new code fails at step 1: invalid literal for int() with base 10: 'a bug'"
    ended = code(fails_first).run("parks")
    assert ended.status == RunStatus.FAILED
    assert prove(run=ended, config=failing).outcome == "migrates"  # its whole history replays: it fails there
