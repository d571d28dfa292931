"""Getting failed work going again: rerun, fork from a step, bulk rerun and cancel; and tags to
find runs by.

Runs advance through the in-process drain; the acme fake's call log shows which calls reached
the vendor.
"""
from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import BaseModel

from connectors import DriverError
from connectors.errors import SanomaError, error_code
from runs import recovery, selectors
from runs.authoring import define_workflow
from runs.comparison import compare_runs
from runs.engine import clock
from runs.models import LedgerRecord, Run, RunStatus, RunTag, Step
from runs.selectors import RunFilter
from runs.testing import make_user
from runs.tests.fixtures import GET, PUBLISH, SEND


class Label(BaseModel):
    label: str = "x"


def four_calls(ctx, input: Label):
    ctx.tag(order=input.label)
    first = ctx.acme.post.publish({"text": f"{input.label}-1"})  # step 2
    ctx.acme.mail.send({"to": "a", "text": first.id})  # step 3
    ctx.acme.mail.send({"to": "b", "text": "third"})  # step 4
    sent = ctx.acme.mail.send({"to": "c", "text": "fourth"})  # step 5
    return {"last": sent.id}


steps = define_workflow(name="steps", input=Label, uses=[PUBLISH, SEND], run=four_calls)


def reordered(ctx, input: Label):
    ctx.tag(order=input.label)
    ctx.acme.post.publish({"text": f"{input.label}-1"})
    ctx.acme.order.get({"order_id": "1"})  # step 3 is now another call
    sent = ctx.acme.mail.send({"to": "c", "text": "fourth"})
    return {"last": sent.id}


steps_v2 = define_workflow(name="steps", input=Label, uses=[PUBLISH, SEND, GET], run=reordered)


@pytest.fixture
def operator(db):
    return make_user("ops", perms=["runs.view_any_run", "runs.operate_runs", "runs.rerun_runs",
                                   "runs.start_workflow"])


def refused(fn, *args, **kwargs) -> SanomaError:
    with pytest.raises(SanomaError) as caught:
        fn(*args, **kwargs)
    return caught.value


def vendor_calls(engine, text=None):
    return [c for c in engine.fake.calls
            if c["outcome"] != "error" and (text is None or c["input"].get("text") == text)]


# -- tags ------------------------------------------------------------------------------------------


def test_a_run_is_found_by_its_tags_its_error_code_and_when_it_started(engine_for):
    engine = engine_for(steps)
    first = engine.run("steps", {"label": "1001"})
    clock.advance(timedelta(hours=2))
    engine.fake.fail_next("acme.post.publish", DriverError("down", retryable=False))
    second = engine.run("steps", {"label": "1002"})
    assert (first.status, second.status) == (RunStatus.FINISHED, RunStatus.FAILED)
    assert selectors.tags_of(first) == {"order": "1001"}
    [tagged] = engine.records(first, "run.tagged")
    assert tagged["tags"] == {"order": "1001"}

    def ids(**filters):
        return [r.id for r in selectors.list_runs(where=RunFilter.parse(**filters)).runs]

    assert ids(tags=["order=1001"]) == [first.id]
    assert ids(error_code="driver_failed") == [second.id]
    assert ids(started_before=(first.created_at + timedelta(hours=1)).isoformat()) == [first.id]
    assert ids(started_after=(first.created_at + timedelta(hours=1)).isoformat()) == [second.id]
    assert ids(tags=["order=1001"], status="failed") == []


@pytest.mark.parametrize(("filters", "says"), [
    ({"tags": ["order"]}, "key=value"),
    ({"started_after": "yesterday"}, "ISO 8601"),
    ({"status": "lost"}, "status must be one of"),
])
def test_a_bad_filter_names_what_is_wrong(filters, says):
    with pytest.raises(SanomaError) as caught:
        RunFilter.parse(**filters)
    assert caught.value.code == "invalid_input" and says in caught.value.message


@pytest.mark.parametrize(("tags", "says"), [({}, "takes keys"), ({"Order": "1"}, "lowercase"),
                                            ({"order": ["1"]}, "text or a whole number"), ({"order": ""}, "1-200")])
def test_a_bad_tag_fails_the_run_and_records_nothing(engine_for, tags, says):
    engine = engine_for(define_workflow(name="bad-tag", run=lambda ctx, input: ctx.tag(**tags)))
    run = engine.run("bad-tag")
    assert (run.status, run.error["code"]) == (RunStatus.FAILED, "invalid_input") and says in run.error["message"]
    assert not RunTag.objects.exists() and not Step.objects.filter(run=run).exists()


# -- rerun -----------------------------------------------------------------------------------------


def test_a_failed_run_is_rerun_with_its_input_and_starter_from_the_top(engine_for, operator):
    engine = engine_for(steps)
    engine.fake.fail_next("acme.post.publish", DriverError("down", retryable=False))
    source = engine.run("steps", {"label": "r"})
    assert source.status == RunStatus.FAILED
    again = recovery.rerun(run_id=source.id, by="ops", config=engine.config)
    assert (again.id, again.input, again.started_by, again.source_run) == (
        f"{source.id}~1", {"label": "r"}, "alice", source.id)
    [started] = engine.records(again, "run.started")
    assert (started["rerun_of"], started["by"]) == (source.id, "ops")
    engine.drain()
    again.refresh_from_db()
    assert again.status == RunStatus.FINISHED
    assert len(vendor_calls(engine, "r-1")) == 1  # from the top: its first call was made (the failed one was not)
    second = recovery.rerun(run_id=source.id, by="ops", config=engine.config)
    assert second.id == f"{source.id}~2"


def test_a_rerun_is_refused_for_a_run_that_did_not_fail_for_a_non_operator_and_for_a_hidden_run(engine_for,
                                                                                                   operator):
    engine = engine_for(steps)
    finished = engine.run("steps")
    assert error_code(refused(recovery.rerun, run_id=finished.id, by="ops", config=engine.config)) == "invalid_input"
    engine.fake.fail_next("acme.post.publish", DriverError("down", retryable=False))
    failed = engine.run("steps")
    assert error_code(refused(recovery.rerun, run_id=failed.id, by="alice", config=engine.config)) == (
        "permission_denied")
    make_user("mallory")
    assert error_code(refused(recovery.rerun, run_id=failed.id, by="mallory", config=engine.config)) == (
        "run_not_found")
    assert Run.objects.count() == 2


# -- fork ------------------------------------------------------------------------------------------


def test_a_fork_reuses_the_steps_before_n_and_makes_the_rest_live(engine_for, operator):
    engine = engine_for(steps)
    engine.fake.fail_next("acme.mail.send", DriverError("mail is down", retryable=False))
    source = engine.run("steps", {"label": "f"})
    assert (source.status, source.error["message"]) == (RunStatus.FAILED, "mail is down")
    before = len(engine.fake.calls)
    fork = recovery.fork(run_id=source.id, from_step=3, by="ops", config=engine.config)
    assert fork.id == f"{source.id}~1" and fork.source_run == source.id
    [forked] = engine.records(fork, "run.forked")
    assert (forked["source"], forked["from_step"], forked["reused"], forked["actor"]) == (source.id, 3, [1, 2], "ops")
    engine.drain()
    fork.refresh_from_db()
    assert fork.status == RunStatus.FINISHED, fork.error
    made = [c["input"] for c in engine.fake.calls[before:]]
    # Steps 1-2 (the tag, the publish) were not made again; 3, 4 and 5 were, live.
    assert made == [{"to": "a", "text": "p1"}, {"to": "b", "text": "third"}, {"to": "c", "text": "fourth"}]
    assert not [c for c in engine.fake.calls[before:] if c["op"] == "acme.post.publish"]
    assert list(LedgerRecord.objects.filter(run_id=fork.id, kind="op.called").values_list("seq", flat=True)) == [
        3, 4, 5]


def test_a_fork_compared_with_its_source_counts_the_steps_it_reused_as_the_same(engine_for, operator):
    engine = engine_for(steps)
    engine.fake.fail_next("acme.mail.send", DriverError("mail is down", retryable=False))
    source = engine.run("steps", {"label": "c"})
    fork = recovery.fork(run_id=source.id, from_step=3, by="ops", config=engine.config)
    engine.drain()
    for a, b in ((source.id, fork.id), (fork.id, source.id)):
        comparison = compare_runs(a_id=a, b_id=b, viewer=None)
        reused = [pair for pair in comparison.steps if pair.a is not None and pair.a.seq < 3]
        assert reused and all(pair.same for pair in reused), [(p.number, p.differs) for p in reused]
        gaps = [pair.a or pair.b for pair in comparison.steps if pair.differs in (("only in a",), ("only in b",))]
        assert not [step for step in gaps if step is not None and step.seq < 3]


def test_a_fork_whose_code_makes_another_call_before_n_is_refused_naming_the_step(engine_for, operator):
    engine = engine_for(steps)
    source = engine.run("steps", {"label": "d"})
    assert source.status == RunStatus.FINISHED
    changed = engine_for(steps_v2)
    err = refused(recovery.fork, run_id=source.id, from_step=5, by="ops", config=changed.config)
    assert err.code == "invalid_input"
    assert "step 3 was call acme.mail.send, now call acme.order.get" in err.message
    assert err.data["diverged"]["seq"] == 3
    assert Run.objects.count() == 1
    # Before the first difference the fork is sound.
    fork = recovery.fork(run_id=source.id, from_step=3, by="ops", config=changed.config)
    changed.drain()
    fork.refresh_from_db()
    assert fork.status == RunStatus.FINISHED


@pytest.mark.parametrize(("from_step", "says"), [(9, "has no step 9; its steps are 1, 2, 3, 4, 5"),
                                                 ("3", "step number")])
def test_a_fork_from_a_step_the_run_does_not_have_is_refused(engine_for, operator, from_step, says):
    engine = engine_for(steps)
    source = engine.run("steps")
    err = refused(recovery.fork, run_id=source.id, from_step=from_step, by="ops", config=engine.config)
    assert err.code == "invalid_input" and says in err.message
    assert Run.objects.count() == 1


# -- bulk ------------------------------------------------------------------------------------------


def test_a_bulk_rerun_of_20_failed_runs_after_the_count_is_confirmed(engine_for, operator):
    engine = engine_for(steps)
    for i in range(20):
        engine.fake.fail_next("acme.post.publish", DriverError("down", retryable=False))
        engine.start("steps", {"label": f"b{i}"})
    engine.start("steps", {"label": "fine"})
    engine.drain()
    where = RunFilter.parse(workflow="steps", error_code="driver_failed")
    assert recovery.count_matching(where=where, by="ops") == 20
    err = refused(recovery.rerun_matching, where=where, expect=19, by="ops", config=engine.config)
    assert err.code == "invalid_input" and "matches 20 run(s) now, not the 19 confirmed" in err.message
    assert Run.objects.count() == 21
    result = recovery.rerun_matching(where=where, expect=20, by="ops", config=engine.config)
    assert (result.matched, len(result.done), result.refused) == (20, 20, [])
    engine.drain()
    assert Run.objects.filter(source_run__gt="", status=RunStatus.FINISHED).count() == 20


def test_a_bulk_cancel_cancels_what_matches(engine_for, operator):
    waiting = define_workflow(name="waits", uses=["wait_message"], run=lambda ctx, input: ctx.wait_message("go"))
    engine = engine_for(waiting)
    runs = [engine.run("waits") for _ in range(3)]
    where = RunFilter.parse(workflow="waits", status="waiting")
    with pytest.raises(SanomaError, match="Say why the run is cancelled"):
        recovery.cancel_matching(where=where, expect=3, by="ops", reason=" ")
    assert set(Run.objects.values_list("status", flat=True)) == {RunStatus.WAITING}  # nothing done
    result = recovery.cancel_matching(where=where, expect=3, by="ops", reason="the shop closed")
    assert sorted(result.done) == sorted(r.id for r in runs)
    assert set(Run.objects.values_list("status", flat=True)) == {RunStatus.CANCELLED}
    records = LedgerRecord.objects.filter(kind="run.cancelled")
    assert {(r.actor, r.body["by"], r.body["reason"]) for r in records} == {("ops", "ops", "the shop closed")}


def _refund_then_mail(ctx, input):
    refunded = ctx.acme.order.refund({"order_id": "7", "amount": 900})  # step 1, held for bob (approval: step 2)
    ctx.acme.mail.send({"to": "customer", "text": f"refunded {refunded.refund_id}"})  # step 3
    return {}


def test_a_forks_plan_says_which_held_call_asks_its_approver_again_as_the_engine_does(engine_for, operator):
    from runs.approvals.services import decide
    from runs.tests.fixtures import REFUND
    from runs.tests.test_api import money_needs_bob

    flow = define_workflow(name="refund-mail", uses=[REFUND, SEND], run=_refund_then_mail)
    engine = engine_for(flow, policy=money_needs_bob)
    make_user("bob")
    source = engine.run("refund-mail", {}, by="alice")
    decide(run_id=source.id, decision="approve", by="bob", timeout=0)
    engine.drain()
    source.refresh_from_db()
    assert source.status == RunStatus.FINISHED

    from_refund = recovery.check_fork(run_id=source.id, from_step=1, by="ops", config=engine.config)
    [refund] = [s for s in from_refund.live if s.name == "acme.order.refund"]
    assert "asks bob again" in refund.again and "the earlier approval does not carry over" in refund.again
    [mail] = [s for s in from_refund.live if s.name == "acme.mail.send"]
    assert "asks" not in mail.again  # never held: sent again without asking anyone
    from_mail = recovery.check_fork(run_id=source.id, from_step=3, by="ops", config=engine.config)
    [kept] = [s for s in from_mail.reused if s.name == "acme.order.refund"]
    assert "held for bob before: that decision stands, not asked again" in kept.again
    assert not any("asks" in s.again for s in from_mail.live)

    # What the engine does: from step 1 bob is asked again; from step 3 nobody is.
    again = recovery.fork(run_id=source.id, from_step=1, by="ops", config=engine.config)
    reused = recovery.fork(run_id=source.id, from_step=3, by="ops", config=engine.config)
    engine.drain()
    again.refresh_from_db()
    reused.refresh_from_db()
    assert (again.status, again.waiting_for) == (RunStatus.WAITING, "approval")
    assert again.approvals.get(status="pending").approver == "bob"
    assert reused.status == RunStatus.FINISHED
