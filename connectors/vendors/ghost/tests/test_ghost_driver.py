"""Ghost's driver against a local Ghost Admin API: the token Ghost checks, a draft written, a post
published once however often it is asked, the edit collision, and Ghost's errors as DriverErrors."""
from __future__ import annotations

import time

import pytest

from connectors.drivers import CallContext
from connectors.errors import DriverError
from connectors.vendors.ghost import DraftRequest, PostRef, make_driver
from connectors.vendors.ghost.auth import admin_token
from connectors.vendors.ghost.tests.ghost_server import ADMIN_API_KEY, API, GhostServer


@pytest.fixture
def server():
    with GhostServer() as vendor:
        yield vendor


def call(server: GhostServer, op: str = "ghost.post.create", *, key: str = ADMIN_API_KEY, url: str | None = None,
         seq: int = 1) -> CallContext:
    return CallContext(idempotency_key=f"run-1:{seq}", run_id="run-1", op_id=op, timeout=5, deadline=time.time() + 5,
                       secrets={"GHOST_ADMIN_URL": url or server.url, "GHOST_ADMIN_API_KEY": key})


DRAFT = DraftRequest(title="Autumn launch", html="<p>It is here.</p>", slug="autumn-launch")


def test_a_draft_is_written_with_a_token_ghost_accepts(server):
    driver = make_driver()
    post = driver.call("ghost.post.create", DRAFT, call(server))
    assert (post["title"], post["slug"], post["status"], post["published_at"]) == (
        "Autumn launch", "autumn-launch", "draft", None)
    [sent] = server.requests_to("POST", f"{API}/posts/")
    assert sent.header("Authorization").startswith("Ghost ") and sent.header("Accept-Version") == "v5.0"
    assert sent.query["source"] == ["html"] and sent.json()["posts"][0]["status"] == "draft"
    assert server.posts[post["post_id"]]["html"] == "<p>It is here.</p>"


def test_a_draft_sent_twice_is_written_twice_and_the_lookup_finds_the_first(server):
    driver = make_driver()
    first = driver.call("ghost.post.create", DRAFT, call(server))
    second = driver.call("ghost.post.create", DRAFT, call(server))
    assert (first["slug"], second["slug"]) == ("autumn-launch", "autumn-launch-2")  # Ghost ignores any key
    found = driver.call("ghost.post.find", DRAFT, call(server, "ghost.post.find"))
    assert found == {"happened": True, "output": first}
    missing = DraftRequest(title="Winter", slug="winter")
    assert driver.call("ghost.post.find", missing, call(server, "ghost.post.find")) == {"happened": False}


def test_the_lookup_cannot_say_when_another_post_holds_the_slug(server):
    driver = make_driver()
    driver.call("ghost.post.create", DraftRequest(title="Something else", slug="autumn-launch"), call(server))
    with pytest.raises(DriverError, match="cannot be told by its slug") as raised:
        driver.call("ghost.post.find", DRAFT, call(server, "ghost.post.find"))
    assert raised.value.retryable is False


def test_publishing_publishes_once_and_a_published_post_is_left_as_it_is(server):
    driver = make_driver()
    draft = driver.call("ghost.post.create", DRAFT, call(server))
    published = driver.call("ghost.post.publish", PostRef(post_id=draft["post_id"]), call(server, "ghost.post.publish"))
    assert published["status"] == "published" and published["url"].endswith("/autumn-launch/")
    [put] = server.requests_to("PUT", f"{API}/posts/{draft['post_id']}/")
    assert put.json() == {"posts": [{"status": "published", "updated_at": draft["updated_at"]}]}
    again = driver.call("ghost.post.publish", PostRef(post_id=draft["post_id"]), call(server, "ghost.post.publish"))
    assert again == published
    assert len(server.requests_to("PUT", f"{API}/posts/{draft['post_id']}/")) == 1  # nothing changed


def test_an_edit_in_between_is_a_collision_the_next_try_gets_past(server):
    driver = make_driver()
    draft = driver.call("ghost.post.create", DRAFT, call(server))
    # Ghost's editor saves between the driver's read and its write: the write carries a stale updated_at.
    server.edit_after_read[draft["post_id"]] = {"title": "Autumn launch!"}
    with pytest.raises(DriverError) as raised:
        driver.call("ghost.post.publish", PostRef(post_id=draft["post_id"]), call(server, "ghost.post.publish"))
    err = raised.value
    assert (err.status, err.vendor_code, err.retryable) == (409, "UpdateCollisionError", True)
    assert "Someone else is editing this post" in str(err)
    assert driver.call("ghost.post.publish", PostRef(post_id=draft["post_id"]),
                       call(server, "ghost.post.publish"))["status"] == "published"


@pytest.mark.parametrize(("key", "says"), [
    ("6489c1f2a0b3c4d5e6f70812:" + "b4" * 32, "401 to POST /ghost/api/admin/posts/: Invalid token (invalid signature)"),
    ("0000c1f2a0b3c4d5e6f70812:" + "a3" * 32, "401 to POST /ghost/api/admin/posts/: Unknown Admin API Key"),
])
def test_a_key_ghost_does_not_know_is_refused_with_ghosts_message(server, key, says):
    with pytest.raises(DriverError) as raised:
        make_driver().call("ghost.post.create", DRAFT, call(server, key=key))
    assert says in str(raised.value) and raised.value.retryable is False and not server.posts


def test_a_key_not_of_ghosts_shape_is_refused_before_anything_is_sent(server):
    with pytest.raises(DriverError, match="GHOST_ADMIN_API_KEY must be <id>:<secret>, the secret in hex"):
        make_driver().call("ghost.post.create", DRAFT, call(server, key="not-a-key"))
    with pytest.raises(DriverError, match="GHOST_ADMIN_URL, GHOST_ADMIN_API_KEY must be set"):
        make_driver().call("ghost.post.create", DRAFT, CallContext(idempotency_key="k", run_id="r", op_id="x"))
    assert not server.received


def test_the_token_is_the_one_ghost_documents():
    import base64
    import json

    token = admin_token(ADMIN_API_KEY, now=1_700_000_000)
    head, body, _ = token.split(".")
    decode = lambda part: json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    assert decode(head) == {"alg": "HS256", "typ": "JWT", "kid": ADMIN_API_KEY.split(":")[0]}
    assert decode(body) == {"iat": 1_700_000_000, "exp": 1_700_000_300, "aud": "/admin/"}


def test_a_validation_error_names_ghosts_message_and_context(server):
    with pytest.raises(DriverError) as raised:
        make_driver().call("ghost.post.create", DraftRequest.model_construct(title="", html="", slug="x"),
                           call(server))
    assert str(raised.value) == ("ghost answered 422 to POST /ghost/api/admin/posts/: Validation error, cannot save "
                                 "post. (Value in [posts.title] cannot be blank.)")
    assert raised.value.vendor_code == "ValidationError"


def test_a_rate_limit_and_an_outage_are_retryable_with_ghosts_wait(server):
    driver = make_driver()
    server.rate_limit(retry_after=30)
    with pytest.raises(DriverError) as limited:
        driver.call("ghost.post.create", DRAFT, call(server))
    assert (limited.value.status, limited.value.retryable, limited.value.retry_after) == (429, True, 30.0)
    assert "Too many requests." in str(limited.value)
    server.unavailable()
    with pytest.raises(DriverError) as down:
        driver.call("ghost.post.create", DRAFT, call(server))
    assert (down.value.status, down.value.retryable) == (503, True) and not server.posts


def test_a_browse_reads_page_by_page(server):
    """The site's posts by pages (`meta.pagination`), as Ghost answers a browse."""
    import httpx

    driver = make_driver()
    for n in range(5):
        driver.call("ghost.post.create", DraftRequest(title=f"Post {n}", slug=f"post-{n}"), call(server))
    token = admin_token(ADMIN_API_KEY, now=int(time.time()))
    got, page = [], 1
    while page:
        answer = httpx.get(f"{server.url}{API}/posts/", params={"limit": 2, "page": page},
                           headers={"Authorization": f"Ghost {token}"}).json()
        got += [p["slug"] for p in answer["posts"]]
        page = answer["meta"]["pagination"]["next"]
    assert sorted(got) == [f"post-{n}" for n in range(5)]


def test_an_answer_without_its_post_is_a_final_error_saying_so(server):
    server.fault(status=201, body={"meta": {}}, method="POST")
    with pytest.raises(DriverError, match="ghost's answer to a new draft has no post") as raised:
        make_driver().call("ghost.post.create", DRAFT, call(server))
    assert raised.value.retryable is False
