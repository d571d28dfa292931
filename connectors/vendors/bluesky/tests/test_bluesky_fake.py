"""Bluesky's fake behaves as Bluesky does: it ignores idempotency keys (a repeat is a second post),
its reconcile read finds the call's own post, and a lost reply leaves the post made."""
from __future__ import annotations

import pytest

from connectors.drivers import CallContext
from connectors.errors import DriverError
from connectors.vendors.bluesky import make_fake, stamp


def ctx(key: str = "run-1:1", op: str = "bluesky.post.create") -> CallContext:
    return CallContext(idempotency_key=key, run_id="run-1", op_id=op)


POST = {"text": "Out now: https://blog.example.com/autumn/"}


def test_a_repeat_with_the_same_key_is_a_second_post():
    fake = make_fake()
    first = fake.call("bluesky.post.create", POST, ctx())
    second = fake.call("bluesky.post.create", POST, ctx())
    assert first["uri"] != second["uri"] and len(fake.state["posts"]) == 2
    assert first["created_at"].endswith(f".{stamp.fraction('run-1:1')}Z")
    [link] = fake.state["posts"][0]["value"]["facets"]
    assert link["features"][0]["uri"] == "https://blog.example.com/autumn/"


def test_a_lost_reply_leaves_the_post_made_and_the_reconcile_read_finds_it():
    fake = make_fake()
    fake.lose_reply("bluesky.post.create")
    with pytest.raises(DriverError, match="reply to bluesky.post.create was lost"):
        fake.call("bluesky.post.create", POST, ctx())
    [made] = fake.state["posts"]
    found = fake.call("bluesky.post.find", POST, ctx(op="bluesky.post.find"))
    assert found["happened"] is True and found["output"]["uri"] == made["uri"]
    assert fake.call("bluesky.post.find", POST, ctx("run-2:1", "bluesky.post.find")) == {"happened": False}


def test_a_failure_before_sending_makes_no_post():
    fake = make_fake()
    fake.fail_next("bluesky.post.create")
    with pytest.raises(DriverError):
        fake.call("bluesky.post.create", POST, ctx())
    assert fake.state["posts"] == []


def test_a_rate_limit_says_how_long_to_wait():
    fake = make_fake()
    fake.rate_limit("bluesky.post.create", retry_after=40)
    with pytest.raises(DriverError) as raised:
        fake.call("bluesky.post.create", POST, ctx())
    assert (raised.value.status, raised.value.retry_after) == (429, 40.0) and fake.state["posts"] == []


def test_a_post_too_long_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="text"):
        make_fake().call("bluesky.post.create", {"text": "x" * 301}, ctx())
