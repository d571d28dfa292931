"""Bluesky's post in real runs through the engine, on its real driver against a local PDS.

The worker's death is the engine's own: right after Bluesky answered (the fault point after the
driver call, raised as a BaseException as a killed worker dies) or right before the request left
(the driver's thread dies first). The run's lease is then taken over as the sweep takes over a dead
worker's run. Bluesky takes no idempotency key, so the call is in doubt, never sent again blindly:
the reconcile read settles it once the attempt can no longer land.
"""
from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from django.test import override_settings

from connectors.drivers import Driver
from connectors.vendors.bluesky import bluesky, make_driver
from connectors.vendors.bluesky.tests.bluesky_server import APP_PASSWORD, HANDLE, BlueskyServer
from runs import selectors, services
from runs.authoring import SanomaConfig, define_workflow
from runs.config.registry import set_config
from runs.config.resolution import resolve_config
from runs.engine import clock, doubts, faults, transitions
from runs.engine.faults import FaultPoint
from runs.models import Run, RunStatus
from runs.testing import drain, make_user

TEXT = "The autumn notes are out: https://blog.example.com/autumn/"
CREATE = "/xrpc/com.atproto.repo.createRecord"

announce = define_workflow(name="post-note", uses=[bluesky.op("bluesky.post.create")],
                           run=lambda ctx, input: ctx.bluesky.post.create({"text": TEXT}).uri)


class Killed(BaseException):
    """The worker died."""


@pytest.fixture
def server(monkeypatch):
    with BlueskyServer() as pds:
        monkeypatch.setenv("BLUESKY_IDENTIFIER", HANDLE)
        monkeypatch.setenv("BLUESKY_APP_PASSWORD", APP_PASSWORD)
        monkeypatch.setenv("BLUESKY_SERVICE", pds.url)
        yield pds


def config_with(driver: Driver | None = None):
    connector = bluesky if driver is None else dataclasses.replace(bluesky, driver=lambda: driver)
    resolved = resolve_config(SanomaConfig(connectors=[connector], workflows=[announce]))
    set_config(resolved)
    return resolved


@pytest.fixture
def alice(db):
    make_user("alice", perms=["runs.start_workflow"])
    with override_settings(SANOMA_RETRY_DELAYS=(0.01, 0.02)):
        yield "alice"
    set_config(None)
    faults.clear()
    clock.reset()


def start(config) -> Run:
    return services.start(workflow="post-note", input={}, started_by="alice", config=config)


def die_and_be_taken_over(config, run: Run) -> Run:
    with pytest.raises(Killed):
        drain(config)
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING  # its worker is gone; its lease runs out
    assert transitions.take_over(run_id=run.id, owner=run.lease_owner, now=clock.now() + timedelta(minutes=5))
    drain(config)
    run.refresh_from_db()
    return run


def settle_when_the_attempt_can_no_longer_land(config, run: Run) -> Run:
    [intent] = [r for r in selectors.ledger_of(run_id=run.id) if r["type"] == "op.intent"][-1:]
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "in_doubt")
    assert run.wake_at is not None and clock.to_ms(run.wake_at) == intent["deadline"] + doubts.CLOCK_MARGIN_MS
    clock.advance(run.wake_at - clock.now())
    drain(config)
    run.refresh_from_db()
    return run


def records(run: Run, kind: str) -> list[dict]:
    return [r for r in selectors.ledger_of(run_id=run.id) if r["type"] == kind]


def test_a_worker_dying_after_the_post_leaves_it_in_doubt_and_the_reconcile_read_finds_it(server, alice):
    config = config_with()
    faults.arm(FaultPoint.AFTER_DRIVER_CALL, Killed())
    run = die_and_be_taken_over(config, start(config))
    assert len(server.posts()) == 1 and len(server.requests_to("POST", CREATE)) == 1  # not sent again
    assert not server.requests_to("GET", "/xrpc/com.atproto.repo.listRecords")  # not asked before the deadline
    run = settle_when_the_attempt_can_no_longer_land(config, run)
    [post] = server.posts()
    assert (run.status, run.result) == (RunStatus.FINISHED, server.records[0]["uri"])
    assert len(server.requests_to("POST", CREATE)) == 1  # one post, though the reply was never recorded
    [resolved] = records(run, "op.resolved")
    assert (resolved["happened"], resolved["by"]) == (True, "reconcile")
    [called] = records(run, "op.called")
    assert called["resolved_by"] == "reconcile" and called["output"]["created_at"] == post["createdAt"]


def test_a_lost_reply_leaves_the_post_in_doubt_and_the_reconcile_read_finds_it(server, alice):
    """The post is made and its reply dropped with the connection: the call is in doubt (the post may
    have been made), never sent again; past the attempt's deadline the reconcile read finds it."""
    config = config_with()
    server.lose_replies = 1
    run = start(config)
    drain(config)
    run.refresh_from_db()
    assert len(server.posts()) == 1 and len(server.requests_to("POST", CREATE)) == 1
    run = settle_when_the_attempt_can_no_longer_land(config, run)
    [post] = server.posts()
    assert (run.status, run.result) == (RunStatus.FINISHED, server.records[0]["uri"]), run.error
    assert len(server.requests_to("POST", CREATE)) == 1  # one post, though its answer was lost
    [resolved] = records(run, "op.resolved")
    assert (resolved["happened"], resolved["by"]) == (True, "reconcile")


def test_a_worker_dying_before_the_post_left_posts_once_after_the_reconcile_read(server, alice):
    real = make_driver()

    def dies_first(i, c):
        if c.attempt == 1:
            raise Killed()  # the worker dies with the intent recorded, before the request is sent
        return real.call("bluesky.post.create", i, c)

    config = config_with(dataclasses.replace(real, functions={**real.functions, "bluesky.post.create": dies_first}))
    run = die_and_be_taken_over(config, start(config))
    assert not server.posts()
    run = settle_when_the_attempt_can_no_longer_land(config, run)
    assert run.status == RunStatus.FINISHED
    assert len(server.posts()) == 1 and len(server.requests_to("POST", CREATE)) == 1  # posted once
    [resolved] = records(run, "op.resolved")
    assert (resolved["happened"], resolved["by"]) == (False, "reconcile")
    assert [r["attempt"] for r in records(run, "op.intent")] == [1, 2]


def test_an_outage_is_not_retried_and_the_run_fails_with_blueskys_message(server, alice):
    config = config_with()
    server.unavailable(path=CREATE)
    run = start(config)
    drain(config)
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and not server.posts()
    assert len(server.requests_to("POST", CREATE)) == 1  # a post is never sent twice blindly
    assert "bluesky answered 503 to POST /xrpc/com.atproto.repo.createRecord: Service Unavailable" in str(run.error)
    assert not records(run, "op.attempt_failed")
