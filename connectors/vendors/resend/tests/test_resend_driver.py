"""Resend's real driver against a local server answering as Resend's API does."""
from __future__ import annotations

import time

import pytest
from pydantic import BaseModel

from connectors.vendors.resend import resend
from connectors.vendors.resend.driver import make_driver
from connectors.vendors.resend.tests.engine import engine_on_drivers
from connectors.vendors.resend.tests.resend_server import KEY, ResendServer
from runs.authoring import CallContext, DriverError, define_workflow
from runs.engine import faults
from runs.engine.faults import FaultPoint
from runs.models import RunStatus
from runs.testing import make_user

DRAFT = {"segment_id": "seg_newsletter", "sender": "Acme <news@acme.example>", "subject": "December news",
         "html": "<p>Hello</p>", "name": "december"}


@pytest.fixture
def server(monkeypatch):
    with ResendServer() as running:
        monkeypatch.setenv("RESEND_API_KEY", KEY)
        monkeypatch.setenv("RESEND_API_URL", running.url)
        yield running


def _context(server, key: str = KEY, **kw) -> CallContext:
    return CallContext(idempotency_key="run-1:1", run_id="run-1", op_id="resend.broadcast.create",
                       secrets={"RESEND_API_KEY": key, "RESEND_API_URL": server.url}, timeout=5,
                       deadline=time.time() + 5, **kw)


def test_it_creates_a_draft_and_sends_it_as_resend_documents(server):
    driver = make_driver()
    draft = resend.op("resend.broadcast.create").input.model_validate(DRAFT)
    created = driver.call("resend.broadcast.create", draft, _context(server))
    [request] = server.requests_to("POST", "/broadcasts")
    assert request.header("authorization") == f"Bearer {KEY}"
    assert request.json() == {"segment_id": "seg_newsletter", "from": "Acme <news@acme.example>",
                              "subject": "December news", "name": "december", "html": "<p>Hello</p>"}
    broadcast_id = created["broadcast_id"]
    ref = resend.op("resend.broadcast.send").input.model_validate({"broadcast_id": broadcast_id})
    assert driver.call("resend.broadcast.send", ref, _context(server)) == {"broadcast_id": broadcast_id}
    got = driver.call("resend.broadcast.get", resend.op("resend.broadcast.get").input.model_validate(
        {"broadcast_id": broadcast_id}), _context(server))
    assert (got["status"], got["subject"], got["segment_id"]) == ("sent", "December news", "seg_newsletter")
    assert server.sends == [broadcast_id]


def test_a_second_send_is_refused_with_resends_code_and_sends_nothing(server):
    driver = make_driver()
    created = driver.call("resend.broadcast.create",
                          resend.op("resend.broadcast.create").input.model_validate(DRAFT), _context(server))
    ref = resend.op("resend.broadcast.send").input.model_validate(created)
    driver.call("resend.broadcast.send", ref, _context(server))
    with pytest.raises(DriverError) as refused:
        driver.call("resend.broadcast.send", ref, _context(server))
    err = refused.value
    assert (err.status, err.vendor_code, err.retryable) == (422, "validation_error", False)
    assert "already been sent" in str(err)
    assert len(server.sends) == 1


@pytest.mark.parametrize(("key", "status", "code"), [("re_wrong_key_000", 403, "invalid_api_key")])
def test_a_bad_key_is_a_final_error_naming_resends_code(server, key, status, code):
    with pytest.raises(DriverError) as refused:
        make_driver().call("resend.broadcast.create",
                           resend.op("resend.broadcast.create").input.model_validate(DRAFT), _context(server, key))
    assert (refused.value.status, refused.value.vendor_code, refused.value.retryable) == (status, code, False)


def test_a_missing_key_is_refused_before_any_request(server):
    with pytest.raises(DriverError, match="RESEND_API_KEY must be set"):
        make_driver().call("resend.broadcast.create",
                           resend.op("resend.broadcast.create").input.model_validate(DRAFT), _context(server, ""))
    assert server.received == []


def test_a_429_carries_resends_retry_after(server):
    server.rate_limit(retry_after=7)
    with pytest.raises(DriverError) as refused:
        make_driver().call("resend.broadcast.create",
                           resend.op("resend.broadcast.create").input.model_validate(DRAFT), _context(server))
    err = refused.value
    assert (err.status, err.vendor_code, err.retry_after, err.retryable) == (429, "rate_limit_exceeded", 7.0, True)


# -- through the engine ----------------------------------------------------------------------------------

class Ref(BaseModel):
    broadcast_id: str


def _read(ctx, input: Ref):
    return ctx.resend.broadcast.get({"broadcast_id": input.broadcast_id}).status


def _send(ctx, input: Ref):
    return ctx.resend.broadcast.send({"broadcast_id": input.broadcast_id}).broadcast_id


WORKFLOWS = [
    define_workflow(name="read-broadcast", input=Ref, uses=[resend.op("resend.broadcast.get")], run=_read),
    define_workflow(name="send-broadcast", input=Ref, uses=[resend.op("resend.broadcast.send")], run=_send),
]


@pytest.fixture
def engine(server, db):
    make_user("alice", perms=["runs.start_workflow"])
    with engine_on_drivers([resend], WORKFLOWS) as running:
        yield running


def _draft(server) -> str:
    return make_driver().call("resend.broadcast.create",
                              resend.op("resend.broadcast.create").input.model_validate(DRAFT),
                              _context(server))["broadcast_id"]


def test_a_429_with_retry_after_is_waited_out_durably_by_the_run(engine, server):
    broadcast_id = _draft(server)
    server.rate_limit(retry_after=30, path=f"/broadcasts/{broadcast_id}")
    began = time.monotonic()
    run = engine.run("read-broadcast", {"broadcast_id": broadcast_id})
    assert time.monotonic() - began < 10  # no thread slept the 30 s out
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "retry")
    [failed] = engine.records(run, "op.attempt_failed")
    assert (failed["error"]["status"], failed["error"]["vendor_code"], failed["wait_ms"]) == (
        429, "rate_limit_exceeded", 30_000)
    engine.later(31)
    run.refresh_from_db()
    assert (run.status, run.result) == (RunStatus.FINISHED, "draft")
    assert len(server.requests_to("GET", f"/broadcasts/{broadcast_id}")) == 2


def test_a_5xx_is_tried_again_on_a_read_and_never_on_a_send(engine, server):
    broadcast_id = _draft(server)
    server.server_error(path=f"/broadcasts/{broadcast_id}")
    read = engine.run("read-broadcast", {"broadcast_id": broadcast_id})
    assert (read.status, read.result) == (RunStatus.FINISHED, "draft")
    assert len(server.requests_to("GET", f"/broadcasts/{broadcast_id}")) == 2
    server.server_error(path=f"/broadcasts/{broadcast_id}/send")
    sent = engine.run("send-broadcast", {"broadcast_id": broadcast_id})
    assert (sent.status, sent.error["code"]) == (RunStatus.FAILED, "driver_failed")
    assert "internal_server_error" in str(engine.records(sent, "op.called")[0]["error"])
    assert len(server.requests_to("POST", f"/broadcasts/{broadcast_id}/send")) == 1  # tried once
    assert server.sends == []


class Killed(BaseException):
    """The worker died."""


def test_a_send_whose_reply_was_lost_is_settled_by_reading_the_broadcast(engine, server):
    broadcast_id = _draft(server)
    faults.arm(FaultPoint.AFTER_DRIVER_CALL, Killed())
    run = engine.start("send-broadcast", {"broadcast_id": broadcast_id})
    with pytest.raises(Killed):
        engine.drain()
    run.refresh_from_db()
    engine.take_over(run)
    engine.drain()
    run.refresh_from_db()
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "in_doubt")  # until the send can no longer land
    engine.later(120)
    run.refresh_from_db()
    assert (run.status, run.result) == (RunStatus.FINISHED, broadcast_id)
    [resolved] = engine.records(run, "op.resolved")
    assert (resolved["happened"], resolved["by"]) == (True, "reconcile")
    assert server.sends == [broadcast_id]  # sent once, never again
