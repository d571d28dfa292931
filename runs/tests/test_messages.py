"""Messages into a run: `ctx.wait_message(topic, timeout=)` and `services.send_message`.

Messages go through the services a person uses (and the API and the command), and a worker
(`engine.drain()`) lets the run read them, as in production. Deadlines move with the runtime's
clock (`clock.advance`), never the wall clock.
"""
from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from guardian.shortcuts import assign_perm
from pydantic import BaseModel
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from connectors.errors import ConfigError, SanomaError, error_code
from runs import services
from runs.authoring import define_workflow
from runs.engine import clock
from runs.models import LedgerRecord, RunMessage, RunStatus, Step
from runs.testing import make_user
from runs.tests.fixtures import GET

# -- workflows --------------------------------------------------------------------------------------


def wait_shipped(ctx, input):
    shipped = ctx.wait_message("shipped")
    return {"shipped": shipped}


shipping = define_workflow(name="shipping", uses=["wait_message"], run=wait_shipped)


def wait_twice(ctx, input):
    first = ctx.wait_message("event")
    order = ctx.acme.order.get({"order_id": "1"})
    second = ctx.wait_message("event")
    return {"first": first, "second": second, "order": order.order_id}


two_events = define_workflow(name="two-events", uses=["wait_message", GET], run=wait_twice)


class Timeout(BaseModel):
    minutes: int = 5


def wait_with_timeout(ctx, input: Timeout):
    return ctx.wait_message("shipped", timeout=timedelta(minutes=input.minutes))


timed = define_workflow(name="timed", input=Timeout, uses=["wait_message"], run=wait_with_timeout)


def wait_or_go_on(ctx, input):
    try:
        got = ctx.wait_message("shipped", timeout=60)
    except SanomaError as err:
        if error_code(err) != "wait_timed_out":
            raise
        got = None
    order = ctx.acme.order.get({"order_id": "1"})
    return {"got": got, "order": order.order_id}


caught = define_workflow(name="caught", uses=["wait_message", GET], run=wait_or_go_on)


def unlisted(ctx, input):
    return ctx.wait_message("shipped")


not_declared = define_workflow(name="not-declared", uses=[GET], run=unlisted)


def send(run, topic="shipped", payload=None, **kwargs):
    kwargs.setdefault("by", "alice")
    return services.send_message(run_id=run.id, topic=topic, payload=payload or {"tracking": "X1"}, **kwargs)


def refused(fn, *args, **kwargs) -> SanomaError:
    with pytest.raises(SanomaError) as caught_error:
        fn(*args, **kwargs)
    return caught_error.value


# -- waiting and reading ------------------------------------------------------------------------------


def test_a_run_waits_durably_and_reads_the_message_sent_to_it(engine_for):
    engine = engine_for(shipping)
    run = engine.run("shipping")
    assert (run.status, run.waiting_for, run.wake_at, run.lease_owner) == (RunStatus.WAITING, "message", None, "")
    message = send(run, payload={"tracking": "X1"})
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED  # woken in the transaction that kept the message
    engine.drain()
    run.refresh_from_db()
    assert (run.status, run.result) == (RunStatus.FINISHED, {"shipped": {"tracking": "X1"}})
    [received] = engine.records(run, "message.received")
    assert (received["topic"], received["payload"], received["by"], received["message"], received["actor"]) == (
        "shipped", {"tracking": "X1"}, "alice", message.message_id, "alice")
    message.refresh_from_db()
    assert message.read_seq == received["seq"] and message.read_at is not None


def test_a_message_sent_before_the_wait_is_kept_and_read_when_the_run_waits(engine_for):
    engine = engine_for(shipping)
    run = engine.start("shipping")  # queued: it has not reached its wait
    send(run, payload={"early": True})
    engine.drain()
    run.refresh_from_db()
    assert (run.status, run.result) == (RunStatus.FINISHED, {"shipped": {"early": True}})


def test_messages_are_read_in_arrival_order_per_topic_and_replay_returns_the_same(engine_for):
    engine = engine_for(two_events)
    run = engine.start("two-events")
    send(run, topic="other", payload={"n": 0})
    send(run, topic="event", payload={"n": 1})
    send(run, topic="event", payload={"n": 2})
    engine.drain()
    run.refresh_from_db()
    assert run.result == {"first": {"n": 1}, "second": {"n": 2}, "order": "1"}
    assert [r["payload"] for r in engine.records(run, "message.received")] == [{"n": 1}, {"n": 2}]
    assert RunMessage.objects.get(run=run, topic="other").read_seq is None  # no one waited on it
    # Steps: wait, message, call, wait, message; each recorded once however often the body replayed.
    assert list(Step.objects.filter(run=run).values_list("kind", flat=True)) == [
        "wait", "message", "call", "wait", "message"]


def test_a_replay_after_a_read_returns_the_recorded_payload(engine_for):
    engine = engine_for(two_events)
    run = engine.run("two-events")
    send(run, topic="event", payload={"n": 1})
    engine.drain()  # reads the first, calls, waits for the second
    run.refresh_from_db()
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "message")
    send(run, topic="event", payload={"n": 2})
    engine.drain()  # the body replays from the top: the first wait returns {"n": 1} from its step
    run.refresh_from_db()
    assert run.result == {"first": {"n": 1}, "second": {"n": 2}, "order": "1"}
    assert len(engine.records(run, "message.received")) == 2


def test_the_same_message_id_sent_twice_is_kept_and_read_once(engine_for):
    engine = engine_for(two_events)
    run = engine.start("two-events")
    first = send(run, topic="event", payload={"n": 1}, message_id="m-1")
    again = send(run, topic="event", payload={"n": 1}, message_id="m-1")
    assert again.pk == first.pk and RunMessage.objects.filter(run=run).count() == 1
    engine.drain()
    run.refresh_from_db()
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "message")  # the second wait still waits
    assert len(engine.records(run, "message.received")) == 1
    send(run, topic="event", payload={"n": 1}, message_id="m-1")  # a late retry: still once
    engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING
    assert RunMessage.objects.filter(run=run).count() == 1


def test_a_wait_times_out_with_wait_timed_out_once_the_deadline_passes(engine_for):
    engine = engine_for(timed)
    run = engine.run("timed", {"minutes": 5})
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "message")
    assert run.wake_at is not None  # the sweep (and the worker's sleep and stop rules) see the deadline
    clock.advance(timedelta(minutes=4))
    engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING
    clock.advance(timedelta(minutes=2))
    engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert run.error["code"] == "wait_timed_out" and run.error["data"]["topic"] == "shipped"
    # Too late: the run has ended.
    assert error_code(refused(send, run)) == "run_ended"


def test_a_message_before_the_deadline_wins_over_the_timeout(engine_for):
    engine = engine_for(timed)
    run = engine.run("timed", {"minutes": 5})
    clock.advance(timedelta(minutes=4))
    send(run, payload={"in": "time"})
    engine.drain()
    clock.advance(timedelta(minutes=2))
    engine.drain()
    run.refresh_from_db()
    assert (run.status, run.result) == (RunStatus.FINISHED, {"in": "time"})


def test_a_caught_wait_timed_out_lets_the_workflow_go_on(engine_for):
    engine = engine_for(caught)
    run = engine.run("caught")
    clock.advance(timedelta(seconds=61))
    engine.drain()
    run.refresh_from_db()
    assert (run.status, run.result) == (RunStatus.FINISHED, {"got": None, "order": "1"})
    assert engine.records(run, "message.received") == []
    assert error_code(refused(send, run)) == "run_ended"


def test_wait_message_must_be_declared_in_uses_when_uses_is_given(engine_for):
    with pytest.raises(ConfigError, match=r'Workflow "not-declared" calls ctx.wait_message at .*test_messages.py:'
                                          r'\d+:12, which its `uses` does not list: add Ctx.wait_message to uses'):
        engine_for(not_declared)


@pytest.mark.parametrize(("topic", "timeout"), [("", None), ("x" * 201, None), ("t", -1), ("t", "5"), ("t", True)])
def test_a_bad_topic_or_timeout_fails_the_run_with_invalid_input(engine_for, topic, timeout):
    def body(ctx, input):
        return ctx.wait_message(topic, timeout=timeout)

    engine = engine_for(define_workflow(name="bad-wait", uses=["wait_message"], run=body))
    run = engine.run("bad-wait")
    assert (run.status, run.error["code"]) == (RunStatus.FAILED, "invalid_input")
    assert not Step.objects.filter(run=run).exists()


# -- refusals: nothing is kept ----------------------------------------------------------------------------


def test_a_message_to_an_ended_run_is_run_ended_and_nothing_is_stored(engine_for):
    engine = engine_for(shipping)
    run = engine.run("shipping")
    send(run)
    engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED
    before = RunMessage.objects.count()
    err = refused(send, run, payload={"late": True}, message_id="late")
    assert error_code(err) == "run_ended"
    assert RunMessage.objects.count() == before


def test_an_unknown_or_invisible_run_is_run_not_found(engine_for):
    make_user("mallory")
    engine = engine_for(shipping)
    run = engine.run("shipping")
    assert error_code(refused(services.send_message, run_id="no-such-run", topic="t", payload={}, by="alice")) == (
        "run_not_found")
    err = refused(send, run, by="mallory")
    assert error_code(err) == "run_not_found" and "may not see it" in err.message
    assert not RunMessage.objects.exists()


def test_a_refused_sender_gets_permission_denied_and_nothing_is_stored(engine_for):
    engine = engine_for(shipping)
    run = engine.run("shipping")
    make_user("viewer", perms=["runs.view_any_run"])  # sees every run, may not send
    err = refused(send, run, by="viewer")
    assert error_code(err) == "permission_denied"
    assert not RunMessage.objects.exists()
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING


def test_the_send_permission_on_the_run_and_operators_may_send(engine_for):
    engine = engine_for(two_events)
    run = engine.run("two-events")
    courier = make_user("courier")
    assign_perm("runs.view_run", courier, run)
    assign_perm("runs.send_message", courier, run)
    make_user("olga", perms=["runs.view_any_run", "runs.operate_runs"])
    assert send(run, topic="event", by="courier").sent_by == "courier"
    assert send(run, topic="event", by="olga").sent_by == "olga"


@pytest.mark.parametrize(("topic", "payload", "message_id"), [
    ("", {}, None), ("x" * 201, {}, None), (5, {}, None), ("t", [1], None), ("t", "text", None),
    ("t", {"a": "\x00"}, None), ("t", {}, ""), ("t", {}, "x" * 201),
])
def test_a_bad_topic_payload_or_id_is_invalid_input_and_nothing_is_stored(engine_for, topic, payload, message_id):
    engine = engine_for(shipping)
    run = engine.run("shipping")
    err = refused(services.send_message, run_id=run.id, topic=topic, payload=payload, message_id=message_id,
                  by="alice")
    assert error_code(err) == "invalid_input" and err.data["issues"]
    assert not RunMessage.objects.exists()


# -- the ledger's chain ---------------------------------------------------------------------------------


def test_ledger_verify_passes_after_a_run_with_messages(engine_for):
    engine = engine_for(two_events, timed)
    run = engine.start("two-events")
    send(run, topic="event", payload={"n": 1})
    engine.drain()
    send(run, topic="event", payload={"n": 2})
    engine.drain()
    engine.run("timed", {"minutes": 1})
    clock.advance(timedelta(minutes=2))
    engine.drain()
    kinds = list(LedgerRecord.objects.filter(run_id=run.id).order_by("chain_index").values_list("kind", flat=True))
    assert kinds == ["run.started", "message.received", "op.called", "message.received", "run.finished"]
    out = StringIO()
    call_command("ledger", "verify", stdout=out)
    assert out.getvalue().startswith("verified: 2 chains")


# -- surfaces -----------------------------------------------------------------------------------------------


def client_for(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def post(client: APIClient, url: str, body):
    return client.post(url, data=json.dumps(body), content_type="application/json")


def test_the_api_sends_a_message(engine_for, alice):
    engine = engine_for(shipping)
    run = engine.run("shipping")
    client = client_for(alice)
    url = f"/api/runs/{run.id}/messages"
    answer = post(client, url, {"topic": "shipped", "payload": {"tracking": "X1"}, "id": "m-1"})
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert (body["id"], body["run_id"], body["topic"], body["payload"], body["sent_by"], body["read"]) == (
        "m-1", run.id, "shipped", {"tracking": "X1"}, "alice", False)
    assert post(client, url, {"topic": "shipped", "payload": {"tracking": "X1"}, "id": "m-1"}).json()["id"] == "m-1"
    engine.drain()
    run.refresh_from_db()
    assert run.result == {"shipped": {"tracking": "X1"}}
    ended = post(client, url, {"topic": "shipped", "payload": {}})
    assert (ended.status_code, ended.json()["code"]) == (409, "run_ended")
    bad = post(client, url, {"topic": "shipped", "payload": [1]})
    assert (bad.status_code, bad.json()["code"]) == (400, "invalid_input")
    unknown = post(client, url, {"topic": "shipped", "payload": {}, "extra": 1})
    assert (unknown.status_code, unknown.json()["code"]) == (400, "invalid_input")
    missing = post(client, "/api/runs/no-such-run/messages", {"topic": "shipped", "payload": {}})
    assert (missing.status_code, missing.json()["code"]) == (404, "run_not_found")
    viewer = make_user("viewer", perms=["runs.view_any_run"])
    denied = post(client_for(viewer), url, {"topic": "shipped", "payload": {}})
    assert (denied.status_code, denied.json()["code"]) == (403, "permission_denied")
    assert RunMessage.objects.filter(run=run).count() == 1


def command(*args: str) -> str:
    out = StringIO()
    call_command("send", *args, stdout=out)
    return out.getvalue()


def test_the_send_command(engine_for):
    engine = engine_for(shipping)
    run = engine.run("shipping")
    printed = command(run.id, "shipped", "--json", '{"tracking": "X1"}', "--as", "alice", "--id", "m-1")
    assert printed.startswith(f"m-1: sent to {run.id} on shipped\n")
    command(run.id, "shipped", "--json", '{"tracking": "X1"}', "--as", "alice", "--id", "m-1")
    assert RunMessage.objects.filter(run=run).count() == 1
    engine.drain()
    run.refresh_from_db()
    assert run.result == {"shipped": {"tracking": "X1"}}
    for args, expected in [
        ((run.id, "shipped", "--json", "{}", "--as", "alice"), "[run_ended]"),
        (("no-such-run", "shipped", "--json", "{}", "--as", "alice"), "[run_not_found]"),
        ((run.id, "shipped", "--json", "[1]", "--as", "alice"), "--json must be a JSON object"),
        ((run.id, "shipped", "--json", "{nope", "--as", "alice"), "--json is not valid JSON"),
    ]:
        with pytest.raises(CommandError) as failed:
            command(*args)
        assert expected in str(failed.value) and "\n" not in str(failed.value)
    make_user("viewer", perms=["runs.view_any_run"])
    other = engine.run("shipping")
    with pytest.raises(CommandError, match=r"\[permission_denied\]"):
        command(other.id, "shipped", "--json", "{}", "--as", "viewer")
    assert not RunMessage.objects.filter(run=other).exists()
