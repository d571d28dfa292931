"""Slack's real driver against a local server answering as Slack's Web API does."""
from __future__ import annotations

import time

import pytest
from pydantic import BaseModel

from connectors.vendors.resend.tests.engine import engine_on_drivers
from connectors.vendors.slack import slack
from connectors.vendors.slack.driver import make_driver
from connectors.vendors.slack.tests.slack_server import TOKEN, SlackServer
from runs.authoring import CallContext, DriverError, define_workflow
from runs.engine import faults
from runs.engine.faults import FaultPoint
from runs.models import RunStatus
from runs.testing import make_user

POST, FIND = slack.op("slack.message.post"), slack.op("slack.message.find")


@pytest.fixture
def server(monkeypatch):
    with SlackServer() as running:
        monkeypatch.setenv("SLACK_BOT_TOKEN", TOKEN)
        monkeypatch.setenv("SLACK_API_URL", running.url)
        yield running


def _context(server, key: str = "run-1:1", token: str = TOKEN) -> CallContext:
    return CallContext(idempotency_key=key, run_id="run-1", op_id=POST.id,
                       secrets={"SLACK_BOT_TOKEN": token, "SLACK_API_URL": server.url}, timeout=5,
                       deadline=time.time() + 5)


def _message(channel: str = "#approvals", text: str = "hello") -> BaseModel:
    return POST.input.model_validate({"channel": channel, "text": text})


def test_a_post_carries_the_calls_key_in_its_metadata_and_is_found_by_it(server):
    driver = make_driver()
    posted = driver.call(POST.id, _message(), _context(server))
    [request] = server.requests_to("POST", "/chat.postMessage")
    assert request.header("authorization") == f"Bearer {TOKEN}"
    assert request.json()["metadata"] == {"event_type": "sanoma_call", "event_payload": {"key": "run-1:1"}}
    assert posted["channel"] == "C0APPROVALS" and server.messages("C0APPROVALS")[0]["ts"] == posted["ts"]
    # The channel named #approvals is found across conversations.list's pages, then its history read.
    assert driver.call(FIND.id, _message(), _context(server)) == {"happened": True, "output": posted}
    assert len(server.requests_to("GET", "/conversations.list")) == 1
    assert driver.call(FIND.id, _message(), _context(server, key="run-1:2")) == {"happened": False}


def test_find_reads_back_through_the_history_pages(server):
    driver = make_driver()
    first = driver.call(POST.id, _message("C0RANDOM"), _context(server, key="old"))
    for n in range(5):
        driver.call(POST.id, _message("C0RANDOM", f"n{n}"), _context(server, key=f"k{n}"))
    import connectors.vendors.slack.driver as slack_driver
    original = slack_driver.HISTORY_LIMIT
    slack_driver.HISTORY_LIMIT = 2
    try:
        assert driver.call(FIND.id, _message("C0RANDOM"), _context(server, key="old"))["output"] == first
    finally:
        slack_driver.HISTORY_LIMIT = original
    assert len(server.requests_to("GET", "/conversations.history")) == 3


@pytest.mark.parametrize(("channel", "token", "code"), [
    ("#nowhere", TOKEN, "channel_not_found"),
    ("#approvals", "xoxb-wrong-000000", "invalid_auth"),
])
def test_slacks_ok_false_is_a_final_error_naming_its_code(server, channel, token, code):
    with pytest.raises(DriverError) as refused:
        make_driver().call(POST.id, _message(channel), _context(server, token=token))
    assert (refused.value.vendor_code, refused.value.retryable) == (code, False)
    assert code in str(refused.value)


def test_a_429_carries_slacks_retry_after(server):
    server.rate_limit(retry_after=12)
    with pytest.raises(DriverError) as refused:
        make_driver().call(POST.id, _message(), _context(server))
    err = refused.value
    assert (err.status, err.vendor_code, err.retry_after, err.retryable) == (429, "ratelimited", 12.0, True)
    assert server.messages("C0APPROVALS") == []


# -- through the engine ----------------------------------------------------------------------------------

class Say(BaseModel):
    text: str = "hello"


WORKFLOWS = [
    define_workflow(name="say", input=Say, uses=[POST],
                    run=lambda ctx, input: ctx.slack.message.post({"channel": "#news", "text": input.text}).ts),
    define_workflow(name="look", input=Say, uses=[FIND],
                    run=lambda ctx, input: ctx.slack.message.find({"channel": "#news", "text": input.text}).happened),
]


@pytest.fixture
def engine(server, db):
    make_user("alice", perms=["runs.start_workflow"])
    with engine_on_drivers([slack], WORKFLOWS) as running:
        yield running


def test_a_429_on_the_read_is_waited_out_durably_and_a_post_is_never_sent_twice(engine, server):
    server.rate_limit(retry_after=30, path="/conversations.list")
    began = time.monotonic()
    run = engine.run("look")
    assert time.monotonic() - began < 10
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "retry")
    [failed] = engine.records(run, "op.attempt_failed")
    assert (failed["error"]["status"], failed["wait_ms"]) == (429, 30_000)
    engine.later(31)
    run.refresh_from_db()
    assert (run.status, run.result) == (RunStatus.FINISHED, False)
    server.fault(status=503, body={"ok": False, "error": "service_unavailable"}, path="/chat.postMessage")
    said = engine.run("say")
    assert (said.status, said.error["code"]) == (RunStatus.FAILED, "driver_failed")
    assert len(server.requests_to("POST", "/chat.postMessage")) == 1  # a post is tried once


class Killed(BaseException):
    """The worker died."""


def test_a_post_whose_reply_was_lost_is_found_in_the_channel_and_not_posted_again(engine, server):
    faults.arm(FaultPoint.AFTER_DRIVER_CALL, Killed())
    run = engine.start("say", {"text": "once"})
    with pytest.raises(Killed):
        engine.drain()
    run.refresh_from_db()
    engine.take_over(run)
    engine.drain()
    run.refresh_from_db()
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "in_doubt")
    engine.later(120)
    run.refresh_from_db()
    [message] = server.messages("C0NEWS")
    assert (run.status, run.result) == (RunStatus.FINISHED, message["ts"])
    assert [r["by"] for r in engine.records(run, "op.resolved")] == ["reconcile"]
    assert len(server.requests_to("POST", "/chat.postMessage")) == 1
