"""Ghost's fake behaves as Ghost does: every draft written anew, unique slugs, a published post left
as it is, Ghost's not-found, and the faults a test queues."""
from __future__ import annotations

import pytest

from connectors.drivers import CallContext
from connectors.errors import DriverError
from connectors.vendors.ghost import make_fake


def ctx(key: str = "run-1:1", op: str = "ghost.post.create") -> CallContext:
    return CallContext(idempotency_key=key, run_id="run-1", op_id=op)


DRAFT = {"title": "Autumn launch", "html": "<p>Here.</p>", "slug": "autumn-launch"}


def test_a_draft_sent_twice_with_one_key_is_two_drafts():
    fake = make_fake()
    first = fake.call("ghost.post.create", DRAFT, ctx())
    second = fake.call("ghost.post.create", DRAFT, ctx())
    assert first["slug"] == "autumn-launch" and second["slug"] == "autumn-launch-2"
    assert len(fake.state["posts"]) == 2
    found = fake.call("ghost.post.find", DRAFT, ctx(op="ghost.post.find"))
    assert found == {"happened": True, "output": first}


def test_publishing_twice_publishes_once():
    fake = make_fake()
    draft = fake.call("ghost.post.create", DRAFT, ctx())
    published = fake.call("ghost.post.publish", {"post_id": draft["post_id"]}, ctx("run-1:2", "ghost.post.publish"))
    again = fake.call("ghost.post.publish", {"post_id": draft["post_id"]}, ctx("run-2:1", "ghost.post.publish"))
    assert published["status"] == "published" and again == published


def test_publishing_a_post_ghost_has_not_is_its_not_found():
    with pytest.raises(DriverError, match="Resource not found error") as raised:
        make_fake().call("ghost.post.publish", {"post_id": "0" * 24}, ctx(op="ghost.post.publish"))
    assert (raised.value.status, raised.value.vendor_code) == (404, "NotFoundError")


def test_a_lost_reply_leaves_the_draft_written():
    fake = make_fake()
    fake.lose_reply("ghost.post.create")
    with pytest.raises(DriverError, match="reply to ghost.post.create was lost"):
        fake.call("ghost.post.create", DRAFT, ctx())
    assert fake.call("ghost.post.find", DRAFT, ctx(op="ghost.post.find"))["happened"] is True


def test_a_bad_input_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="slug"):
        make_fake().call("ghost.post.create", {**DRAFT, "slug": "Not A Slug"}, ctx())
