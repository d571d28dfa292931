"""Calls through ctx: schemas, idempotency keys, retries, sleeps, ctx.all."""
from __future__ import annotations

import importlib.util
from datetime import timedelta

import pytest
from django.db import DatabaseError
from django.test import override_settings

from connectors import DriverError
from connectors.errors import ConfigError
from runs.config.workflows import define_workflow
from runs.engine import clock, faults, transitions
from runs.engine.faults import FaultPoint
from runs.models import Run, Step
from runs.policies import allow, define_policy
from runs.tests.fixtures import GET, PUBLISH, REFUND, SEND


def wf(name, run, uses=(GET, REFUND, SEND, PUBLISH, "sleep", "all")):
    return define_workflow(name=name, uses=list(uses), run=run)


def test_an_operation_its_uses_do_not_list_is_refused_with_the_config_naming_the_fix(engine_for):
    narrow = wf("narrow", lambda ctx, i: ctx.acme.mail.send({"to": "x"}), uses=[GET])
    with pytest.raises(ConfigError) as refused:
        engine_for(narrow)
    line = narrow.run.__code__.co_firstlineno
    assert (f'Workflow "narrow" calls ctx.acme.mail.send at {__file__}:{line}:42, which its `uses` does not list: '
            "add acme.mail.send to uses, or leave uses out (it is then derived from the calls)") in str(refused.value)


def test_an_input_refused_by_the_operation_schema_fails_the_run_before_any_call(engine_for):
    engine = engine_for(wf("bad-input", lambda ctx, i: ctx.acme.order.refund({"order_id": "1", "amount": -5})))
    run = engine.run("bad-input")
    assert run.error["code"] == "invalid_input"
    assert run.error["data"]["op"] == "acme.order.refund"
    assert run.error["data"]["issues"][0]["path"] == ["amount"]
    assert run.error["message"].startswith("The input to acme.order.refund does not match its schema: amount:")
    assert engine.fake.calls == []
    assert engine.kinds(run) == ["run.started", "run.failed"]


def test_every_try_of_a_call_carries_the_same_idempotency_key(engine_for):
    engine = engine_for(wf("keys", lambda ctx, i: [ctx.acme.order.get({"order_id": "1"}).order_id,
                                                     ctx.acme.post.publish({"text": "hi"}).id]))
    engine.fake.rate_limit("acme.post.publish")
    run = engine.run("keys")
    assert run.status == "finished", run.error
    keys = [(c["op"], c["idempotency_key"], c["attempt"]) for c in engine.fake.calls]
    assert keys == [
        ("acme.order.get", f"{run.id}:1", 1),
        ("acme.post.publish", f"{run.id}:2", 1),
        ("acme.post.publish", f"{run.id}:2", 2),
    ]


def test_an_idempotent_call_failing_once_succeeds_on_the_second_try(engine_for):
    engine = engine_for(wf("retry", lambda ctx, i: ctx.acme.post.publish({"text": "hi"}).id))
    engine.fake.fail_next("acme.post.publish")
    run = engine.run("retry")
    assert run.status == "finished"
    [called] = engine.records(run, "op.called")
    assert called["attempt"] == 2 and "error" not in called


def test_three_retryable_failures_fail_the_run_with_the_last_error(engine_for):
    engine = engine_for(wf("retry3", lambda ctx, i: ctx.acme.post.publish({"text": "hi"})))
    for n in (1, 2, 3):
        engine.fake.fail_next("acme.post.publish", DriverError(f"vendor down #{n}", retryable=True, status=503))
    run = engine.run("retry3")
    assert run.error["code"] == "driver_failed"
    assert run.error["message"] == "vendor down #3"
    [called] = engine.records(run, "op.called")
    assert called["attempt"] == 3 and called["error"]["message"] == "vendor down #3"


@override_settings(SANOMA_RETRY_DELAYS=(1.0, 2.0))
def test_retries_wait_one_then_two_seconds(engine_for):
    engine = engine_for(wf("slow-retry", lambda ctx, i: ctx.acme.post.publish({"text": "hi"})))
    engine.fake.fail_next("acme.post.publish")
    engine.fake.fail_next("acme.post.publish")
    waited: list[float] = []
    with clock.sleeping_with(waited.append):
        run = engine.run("slow-retry")
    assert run.status == "finished"
    assert waited == [1.0, 2.0]
    assert [c["outcome"] for c in engine.fake.calls][-1] == "ok" and len(engine.fake.calls) == 3


def test_a_ledger_write_that_fails_after_the_vendor_acted_is_retried_after_50_200_and_800_ms(engine_for):
    engine = engine_for(wf("ledger-waits", lambda ctx, i: ctx.acme.order.refund({"order_id": "1", "amount": 5})))
    faults.arm(FaultPoint.STEP_COMMIT, DatabaseError("connection reset"), times=3)
    waited: list[float] = []
    with clock.sleeping_with(waited.append):
        run = engine.run("ledger-waits")
    assert run.status == "finished"
    assert waited == [0.05, 0.2, 0.8]


def test_a_final_error_or_a_reply_refused_by_the_output_schema_is_tried_once(engine_for):
    engine = engine_for(wf("final", lambda ctx, i: ctx.acme.post.publish({"text": "hi"})))
    engine.fake.fail_next("acme.post.publish", DriverError("no such blog", retryable=False, status=404))
    run = engine.run("final")
    assert run.error["message"] == "no such blog"
    assert len(engine.fake.calls) == 1
    bad = engine_for(wf("bad-reply", lambda ctx, i: ctx.acme.order.get({"order_id": "1"})))
    bad.fake.update(lambda state: state["orders"]["1"].update(total="lots"))
    run = bad.run("bad-reply")
    assert run.status == "failed" and "does not match its output schema" in run.error["message"]
    assert len(bad.fake.calls) == 1


def test_a_lost_reply_of_a_non_idempotent_call_is_not_retried_and_took_effect_once(engine_for):
    engine = engine_for(wf("lost", lambda ctx, i: ctx.acme.order.refund({"order_id": "1", "amount": 5})))
    engine.fake.lose_reply("acme.order.refund")
    run = engine.run("lost")
    assert run.error["code"] == "driver_failed"
    assert len(engine.fake.state["refunds"]) == 1
    assert len(engine.fake.calls) == 1


def test_a_plain_exception_from_a_driver_fails_the_run_without_a_code(engine_for):
    engine = engine_for(wf("plain", lambda ctx, i: ctx.acme.mail.send({"to": "x"})))
    engine.fake.fail_next("acme.mail.send", RuntimeError("socket closed"))
    run = engine.run("plain")
    assert run.error == {"name": "RuntimeError", "message": "socket closed"}


class Crash(BaseException):
    """Stands for the worker process dying: nothing after the raise happens."""


def test_a_worker_dying_mid_call_is_recovered_with_the_same_key_and_one_effect(engine_for):
    def body(ctx, i):
        refund = ctx.acme.order.refund({"order_id": "1", "amount": 7})
        return refund.refund_id

    engine = engine_for(wf("crashy", body))
    faults.arm(FaultPoint.AFTER_DRIVER_CALL, Crash("killed"))
    started = engine.start("crashy")
    with pytest.raises(Crash):
        engine.drain()
    stuck = Run.objects.get(pk=started.id)
    assert stuck.status == "running" and stuck.lease_owner
    clock.advance(timedelta(seconds=60))  # the dead worker's lease runs out
    assert transitions.take_over(run_id=started.id, owner=stuck.lease_owner, now=clock.now())
    engine.drain()
    done = Run.objects.get(pk=started.id)
    assert done.status == "finished" and done.result == "re_1"
    assert len(engine.fake.state["refunds"]) == 1
    assert [c["idempotency_key"] for c in engine.fake.calls] == [f"{started.id}:1", f"{started.id}:1"]
    assert [c["outcome"] for c in engine.fake.calls] == ["ok", "repeat"]
    assert len(engine.records(done, "op.called")) == 1


def test_a_call_the_ledger_cannot_record_refuses_every_later_call(engine_for):
    def body(ctx, i):
        try:
            ctx.acme.order.refund({"order_id": "1", "amount": 5})
        except Exception as err:
            first = str(err)
        ctx.acme.order.refund({"order_id": "1", "amount": 5})
        return first

    engine = engine_for(wf("unrecorded", body))
    faults.arm(FaultPoint.STEP_COMMIT, DatabaseError("disk full"), times=4)
    run = engine.run("unrecorded")
    assert run.error["code"] == "run_ended"
    assert "acme.order.refund succeeded, but the ledger could not record it" in run.error["message"]
    assert len(engine.fake.state["refunds"]) == 1


def test_a_transient_ledger_failure_is_retried_and_a_final_one_is_not(engine_for):
    engine = engine_for(wf("flaky-ledger",
                           lambda ctx, i: ctx.acme.order.refund({"order_id": "1", "amount": 5}).refund_id))
    faults.arm(FaultPoint.STEP_COMMIT, DatabaseError("connection reset"), times=3)
    run = engine.run("flaky-ledger")
    assert run.status == "finished" and len(engine.records(run, "op.called")) == 1
    faults.clear()
    faults.arm(FaultPoint.STEP_COMMIT, TypeError("not serialisable"), times=1)
    run = engine.run("flaky-ledger")
    assert run.status == "failed" and "could not record it: not serialisable" in run.error["message"]


def test_a_last_call_whose_checkpoint_cannot_be_written_with_the_end_fails_where_the_workflow_made_it(engine_for):
    # The last call's checkpoint waits behind the workflow's code and is written with the run's
    # end; when that cannot be written, the call itself fails, inside the workflow's try.
    def body(ctx, i):
        try:
            refund = ctx.acme.order.refund({"order_id": "1", "amount": 5})
        except Exception as err:
            return {"caught": str(err)}
        return {"refund": refund.refund_id}

    engine = engine_for(wf("unrecorded-last", body))
    faults.arm(FaultPoint.STEP_COMMIT, TypeError("not serialisable"), times=1)
    run = engine.run("unrecorded-last")
    assert run.status == "finished"
    assert run.result == {"caught": "acme.order.refund succeeded, but the ledger could not record it: not serialisable"}
    assert len(engine.fake.state["refunds"]) == 1 and len(engine.fake.calls) == 1
    assert not engine.records(run, "op.called")


def test_opaque_fields_are_recorded_by_name_only(engine_for):
    engine = engine_for(wf("opaque", lambda ctx, i: ctx.acme.post.publish({"text": "hi"}).handle))
    run = engine.run("opaque")
    assert run.result == "secret-handle"
    [called] = engine.records(run, "op.called")
    assert called["output"]["handle"] == "<handle>"


@pytest.mark.parametrize("request_, message", [
    ({"until": "2026-10-07T09:00:00"}, "until: must be an ISO 8601 date-time with an offset"),
    ({"seconds": -1}, "seconds: must not be negative"),
    ({"second": 5}, "Unrecognized key(s) second"),
    ({}, "ctx.sleep needs until or a duration"),
])
def test_a_bad_sleep_fails_the_run_before_any_durable_step(engine_for, request_, message):
    engine = engine_for(wf("bad-sleep", lambda ctx, i: ctx.sleep(**request_)))
    run = engine.run("bad-sleep")
    assert run.error["code"] == "invalid_input"
    assert message in run.error["message"]
    assert not Step.objects.filter(run=run).exists()
    assert engine.kinds(run) == ["run.started", "run.failed"]


def test_a_sleep_until_the_past_records_but_does_not_wait(engine_for):
    engine = engine_for(wf("past", lambda ctx, i: ctx.sleep(until="2020-01-01T00:00:00+00:00") or "woke"))
    run = engine.run("past")
    assert run.status == "finished"
    [record] = engine.records(run, "sleep.started")
    assert record["until"] == 1577836800000


def test_a_sleep_for_a_duration_waits_from_when_it_started_and_survives_replay(engine_for):
    def body(ctx, i):
        ctx.sleep(minutes=5)
        return ctx.acme.mail.send({"to": "later"}).id

    engine = engine_for(wf("later", body))
    before = clock.now_ms()
    started = engine.run("later")
    assert started.status == "waiting" and started.waiting_for == "sleep"
    [record] = engine.records(started, "sleep.started")
    assert before + 300_000 <= record["until"] <= clock.now_ms() + 300_000
    assert engine.fake.calls == []
    clock.advance(timedelta(minutes=4))
    engine.drain()
    assert Run.objects.get(pk=started.id).status == "waiting"
    clock.advance(timedelta(minutes=2))
    engine.drain()
    done = Run.objects.get(pk=started.id)
    assert done.status == "finished" and done.result == "m1"
    assert len(engine.records(done, "sleep.started")) == 1


def test_ctx_all_runs_members_in_order_and_tags_their_records(engine_for):
    def body(ctx, i):
        first = ctx.acme.order.get({"order_id": "1"})
        outputs = ctx.all([
            lambda: ctx.acme.mail.send({"to": "a"}).id,
            lambda: ctx.acme.mail.send({"to": "b"}).id,
            lambda: ctx.acme.mail.send({"to": "c"}).id,
        ])
        return [first.order_id, *outputs]

    engine = engine_for(wf("fan", body))
    run = engine.run("fan")
    assert run.result == ["1", "m1", "m2", "m3"]
    assert [c["input"]["to"] for c in engine.fake.calls[1:]] == ["a", "b", "c"]
    calls = engine.records(run, "op.called")
    assert "group" not in calls[0]
    assert [c["group"] for c in calls[1:]] == [{"id": "all:2", "index": n, "size": 3} for n in range(3)]


def test_a_failing_member_stops_the_group_and_its_error_is_rethrown(engine_for):
    def body(ctx, i):
        try:
            ctx.all([
                lambda: ctx.acme.mail.send({"to": "a"}),
                lambda: ctx.acme.order.get({"order_id": "missing"}),
                lambda: ctx.acme.mail.send({"to": "c"}),
            ])
        except Exception as err:
            return {"code": getattr(err, "code", None), "message": str(err)}

    engine = engine_for(wf("fan-fail", body))
    run = engine.run("fan-fail")
    assert run.result == {"code": "driver_failed", "message": "no order missing"}
    assert [c["input"].get("to") for c in engine.fake.calls] == ["a", None]


@pytest.mark.parametrize("body, message", [
    (lambda ctx, i: ctx.all([lambda: ctx.all([])]), "ctx.all cannot be nested"),
    (lambda ctx, i: ctx.all("not a list"), "ctx.all's members must be written in the call"),
    (lambda ctx, i: ctx.all([1, 2]), "a ctx.all member must be a lambda or a function defined in run"),
])
def test_ctx_all_refuses_nesting_and_what_is_not_a_list_of_functions_when_the_workflow_resolves(engine_for, body,
                                                                                                 message):
    # The outline cannot draw these, so the config is refused before any run: the file, line and why.
    with pytest.raises(ConfigError) as refused:
        engine_for(wf("all-bad", body))
    assert message in str(refused.value) and "test_calls.py:" in str(refused.value)


def test_an_empty_ctx_all_returns_an_empty_list_and_writes_nothing(engine_for):
    engine = engine_for(wf("all-empty", lambda ctx, i: ctx.all([])))
    run = engine.run("all-empty")
    assert run.result == []
    assert engine.kinds(run) == ["run.started", "run.finished"]


def test_ctx_now_is_recorded_and_replays_the_same(engine_for):
    def body(ctx, i):
        at = ctx.now()
        ctx.sleep(seconds=30)
        return at.isoformat()

    engine = engine_for(wf("clock", body))
    started = engine.run("clock")
    recorded = Step.objects.get(run=started, kind="now").output
    assert recorded is not None
    first = recorded["at"]
    clock.advance(timedelta(minutes=1))
    engine.drain()
    done = Run.objects.get(pk=started.id)
    assert done.result == clock.from_ms(first).isoformat()


def test_a_workflow_keeping_ctx_for_later_is_refused_when_it_resolves(engine_for):
    kept = {}

    def body(ctx, i):
        kept["ctx"] = ctx
        return "done"

    with pytest.raises(ConfigError) as refused:
        engine_for(wf("leaky", body))
    assert 'ctx is stored in kept["ctx"]' in str(refused.value)


def test_a_ctx_call_from_outside_the_outline_fails_the_run_before_anything_is_called(engine_for, tmp_path):
    # A helper in another file that gets hold of ctx behind the outline's back (here by reading its
    # caller's frame): its call is refused before the policy or the vendor sees it.
    helper = tmp_path / "sneaky_helper.py"
    helper.write_text("import sys\n\n\ndef send():\n"
                      "    ctx = sys._getframe(1).f_locals['ctx']\n"
                      "    return ctx.acme.mail.send({'to': 'late'})\n")
    spec = importlib.util.spec_from_file_location("sneaky_helper", helper)
    assert spec is not None and spec.loader is not None
    sneaky = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sneaky)

    def body(ctx, i):
        ctx.acme.order.get({"order_id": "1"})
        return sneaky.send()

    asked: list[str] = []

    def allow_and_note(call):
        asked.append(call.op_id)
        return allow()

    engine = engine_for(wf("sneaky", body), policy=define_policy(allow_and_note, version="t1"))
    run = engine.run("sneaky")
    assert (run.status, run.error["code"]) == ("failed", "call_not_in_outline"), run.error
    assert "sneaky_helper.py:6" in run.error["message"]
    assert asked == ["acme.order.get"]  # the policy never saw the helper's call
    assert [c["op"] for c in engine.fake.calls] == ["acme.order.get"]  # nor did the vendor


def test_a_workflow_that_changes_its_calls_fails_on_replay_instead_of_calling_blindly(engine_for):
    state = {"first": True}

    def body(ctx, i):
        if state.pop("first", False):
            ctx.acme.mail.send({"to": "a"})
        else:
            ctx.acme.order.get({"order_id": "1"})
        ctx.sleep(seconds=1)
        return "ok"

    engine = engine_for(wf("drifty", body))
    started = engine.run("drifty")
    clock.advance(timedelta(seconds=5))
    engine.drain()
    failed = Run.objects.get(pk=started.id)
    assert failed.error is not None
    assert failed.status == "failed" and "no longer replays: step 1 was call acme.mail.send" in failed.error["message"]


@pytest.mark.django_db(transaction=True)
def test_a_slow_vendor_call_keeps_its_lease_so_no_other_worker_takes_the_run(engine_for):
    import time as wall

    seen = {}

    def body(ctx, i):
        return ctx.acme.order.get({"order_id": "1"}).order_id

    engine = engine_for(wf("slow-call", body))
    original = engine.fake.driver.functions["acme.order.get"]

    def slow(payload, context):
        if "taken_over" not in seen:
            wall.sleep(2.5)  # longer than the lease below
            held = Run.objects.get(pk=context.run_id)
            seen["taken_over"] = transitions.take_over(run_id=held.pk, owner=held.lease_owner, now=clock.now())
        return original(payload, context)

    engine.config.drivers["acme.order.get"] = type(engine.fake.driver)(
        vendor="acme", functions={**engine.fake.driver.functions, "acme.order.get": slow})
    with override_settings(SANOMA_LEASE_SECONDS=1.5):
        done = engine.run("slow-call")
    assert seen["taken_over"] == 0
    assert done.status == "finished" and done.result == "1"
