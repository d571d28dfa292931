"""Ghost's operations in real runs through the engine, on the real driver against a local Ghost:
a 429 with `Retry-After` waited out durably (the run waits, no thread sleeps), a 5xx retried for
the idempotent publish and not for the draft, and a final error naming Ghost's message."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings

from connectors.vendors.ghost import ghost
from connectors.vendors.ghost.tests.ghost_server import ADMIN_API_KEY, API, GhostServer
from runs import selectors, services
from runs.authoring import SanomaConfig, define_workflow
from runs.config.registry import set_config
from runs.config.resolution import resolve_config
from runs.engine import clock, faults, transitions
from runs.engine.faults import FaultPoint
from runs.models import Run, RunStatus
from runs.testing import drain, make_user


def _write_and_publish(ctx, input):
    draft = ctx.ghost.post.create({"title": "Autumn launch", "html": "<p>Here.</p>", "slug": "autumn-launch"})
    return ctx.ghost.post.publish({"post_id": draft.post_id}).url


launch = define_workflow(name="launch", uses=[ghost.op("ghost.post.create"), ghost.op("ghost.post.publish")],
                         run=_write_and_publish)


@pytest.fixture
def server(monkeypatch):
    with GhostServer() as site:
        monkeypatch.setenv("GHOST_ADMIN_URL", site.url)
        monkeypatch.setenv("GHOST_ADMIN_API_KEY", ADMIN_API_KEY)
        yield site


@pytest.fixture
def config(db):
    make_user("alice", perms=["runs.start_workflow"])
    resolved = resolve_config(SanomaConfig(connectors=[ghost], workflows=[launch]))
    set_config(resolved)
    with override_settings(SANOMA_RETRY_DELAYS=(0.01, 0.02)):
        yield resolved
    set_config(None)
    faults.clear()
    clock.reset()


def run_it(config) -> Run:
    run = services.start(workflow="launch", input={}, started_by="alice", config=config)
    drain(config)
    run.refresh_from_db()
    return run


def records(run: Run, kind: str) -> list[dict]:
    return [r for r in selectors.ledger_of(run_id=run.id) if r["type"] == kind]


def test_a_rate_limit_on_publishing_is_waited_out_durably(server, config):
    server.rate_limit(retry_after=30, method="GET", path=f"{API}/posts/")
    run = run_it(config)
    # The draft was written; publishing was refused 429: the run waits the 30 s Ghost asked for.
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "retry") and run.wake_at is not None
    [failed] = records(run, "op.attempt_failed")
    assert failed["op"] == "ghost.post.publish" and (failed["error"]["status"], failed["error"]["vendor_code"]) == (
        429, "TooManyRequestsError")
    assert 29_000 <= failed["wait_ms"] <= 30_000 and failed["next_at"] == clock.to_ms(run.wake_at)
    assert len(server.posts) == 1 and not server.requests_to("PUT", f"{API}/posts/{next(iter(server.posts))}/")
    clock.advance(run.wake_at - clock.now() + timedelta(milliseconds=1))
    drain(config)
    run.refresh_from_db()
    [post] = server.posts.values()
    assert (run.status, run.result, post["status"]) == (RunStatus.FINISHED, f"{server.url}/autumn-launch/",
                                                        "published")
    [published] = [r for r in records(run, "op.called") if r["op"] == "ghost.post.publish"]
    assert published["attempt"] == 2


def test_an_outage_is_retried_for_publishing(server, config):
    server.unavailable(method="PUT", times=2)
    run = run_it(config)
    [post] = server.posts.values()
    assert (run.status, post["status"]) == (RunStatus.FINISHED, "published")
    assert [r["attempt"] for r in records(run, "op.attempt_failed")] == [1, 2]
    assert len(server.requests_to("PUT", f"{API}/posts/{post['id']}/")) == 3  # tried until it went through


def test_an_outage_is_not_retried_for_the_draft_and_names_ghosts_message(server, config):
    server.unavailable(method="POST")
    run = run_it(config)
    assert run.status == RunStatus.FAILED and not server.posts
    assert len(server.requests_to("POST", f"{API}/posts/")) == 1  # a draft is never sent twice blindly
    assert "ghost answered 503 to POST /ghost/api/admin/posts/: The server is temporarily unavailable." in str(
        run.error)


class Killed(BaseException):
    """The worker died."""


def test_a_draft_in_doubt_is_found_by_its_slug_and_not_written_twice(server, config):
    faults.arm(FaultPoint.AFTER_DRIVER_CALL, Killed())  # the worker dies once Ghost wrote the draft
    run = services.start(workflow="launch", input={}, started_by="alice", config=config)
    with pytest.raises(Killed):
        drain(config)
    run.refresh_from_db()
    assert transitions.take_over(run_id=run.id, owner=run.lease_owner, now=clock.now() + timedelta(minutes=5))
    drain(config)
    run.refresh_from_db()
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "in_doubt") and run.wake_at is not None
    clock.advance(run.wake_at - clock.now())
    drain(config)
    run.refresh_from_db()
    [post] = server.posts.values()  # one draft, found by its slug, then published
    assert (run.status, post["status"]) == (RunStatus.FINISHED, "published")
    assert len(server.requests_to("POST", f"{API}/posts/")) == 1
    assert server.requests_to("GET", f"{API}/posts/slug/autumn-launch/")
    [resolved] = records(run, "op.resolved")
    assert (resolved["op"], resolved["happened"], resolved["by"]) == ("ghost.post.create", True, "reconcile")
