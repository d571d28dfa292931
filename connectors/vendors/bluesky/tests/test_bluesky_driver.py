"""Bluesky's driver against a local PDS: the session made once, a post with its links and its
derived `createdAt`, a repeat posting twice, the reconcile read through the account's pages, and
XRPC's errors and rate limits as DriverErrors."""
from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from connectors.drivers import CallContext
from connectors.errors import DriverError
from connectors.vendors.bluesky import PostRequest, make_driver, stamp
from connectors.vendors.bluesky.driver import facets
from connectors.vendors.bluesky.tests.bluesky_server import APP_PASSWORD, DID, HANDLE, BlueskyServer

CREATE = "/xrpc/com.atproto.repo.createRecord"
SESSION = "/xrpc/com.atproto.server.createSession"
LIST = "/xrpc/com.atproto.repo.listRecords"


@pytest.fixture
def server():
    with BlueskyServer() as pds:
        yield pds


def call(server: BlueskyServer, op: str = "bluesky.post.create", *, key: str = "run-1:3",
         password: str = APP_PASSWORD) -> CallContext:
    return CallContext(idempotency_key=key, run_id=key.split(":")[0], op_id=op, timeout=5, deadline=time.time() + 5,
                       secrets={"BLUESKY_IDENTIFIER": HANDLE, "BLUESKY_APP_PASSWORD": password,
                                "BLUESKY_SERVICE": server.url})


POST = PostRequest(text="Read the autumn notes: https://blog.example.com/autumn/ ✨", langs=["en"])


def test_a_post_is_made_once_with_its_link_and_the_createdAt_derived_from_the_call(server):
    driver = make_driver()
    post = driver.call("bluesky.post.create", POST, call(server))
    [record] = server.posts()
    assert record["text"] == POST.text and record["langs"] == ["en"]
    assert record["createdAt"] == post["created_at"] and record["createdAt"].endswith(f".{stamp.fraction('run-1:3')}Z")
    [link] = record["facets"]
    start, end = link["index"]["byteStart"], link["index"]["byteEnd"]
    assert POST.text.encode()[start:end] == b"https://blog.example.com/autumn/"
    assert post["uri"].startswith(f"at://{DID}/app.bsky.feed.post/")
    assert post["url"] == f"https://bsky.app/profile/{DID}/post/{post['uri'].rsplit('/', 1)[-1]}"
    [sent] = server.requests_to("POST", CREATE)
    assert sent.header("Authorization").startswith("Bearer ") and sent.json()["repo"] == DID
    assert sent.header("Idempotency-Key") is None  # Bluesky reads none


def test_the_session_is_made_once_and_kept(server):
    driver = make_driver()
    driver.call("bluesky.post.create", POST, call(server, key="run-1:1"))
    driver.call("bluesky.post.create", POST, call(server, key="run-1:2"))
    assert len(server.requests_to("POST", SESSION)) == 1


def test_a_token_bluesky_no_longer_takes_fails_the_call_and_the_next_logs_in_again(server):
    driver = make_driver()
    driver.call("bluesky.post.create", POST, call(server, key="run-1:1"))
    server.tokens = {token: time.time() - 1 for token in server.tokens}  # expired before its time
    with pytest.raises(DriverError) as raised:
        driver.call("bluesky.post.create", POST, call(server, key="run-1:2"))
    assert (raised.value.status, raised.value.vendor_code) == (400, "ExpiredToken")
    assert "Token has expired" in str(raised.value) and len(server.posts()) == 1
    driver.call("bluesky.post.create", POST, call(server, key="run-1:3"))
    assert len(server.posts()) == 2 and len(server.requests_to("POST", SESSION)) == 2


def test_a_repeat_posts_twice_and_the_reconcile_read_finds_the_calls_own(server):
    driver = make_driver()
    server.add_post(POST.text, stamp.created_at("another-run:3"))  # the same text, from another call
    driver.call("bluesky.post.create", POST, call(server))
    second = driver.call("bluesky.post.create", POST, call(server))
    assert len(server.posts()) == 3  # Bluesky ignores any key: the repeat is a second post
    found = driver.call("bluesky.post.find", POST, call(server, "bluesky.post.find"))
    assert found == {"happened": True, "output": second}  # the call's own, newest first
    other = driver.call("bluesky.post.find", POST, call(server, "bluesky.post.find", key="run-9:1"))
    assert other == {"happened": False}


def test_the_reconcile_read_goes_page_by_page_with_the_cursor(server):
    driver = make_driver()
    driver.call("bluesky.post.create", POST, call(server, key="run-2:1"))
    for n in range(230):  # later posts push the call's post to the third page
        server.add_post(f"note {n}", f"2026-12-04T10:00:{n % 60:02d}.000Z")
    found = driver.call("bluesky.post.find", POST, call(server, "bluesky.post.find", key="run-2:1"))
    assert found["happened"] is True
    lists = server.requests_to("GET", LIST)
    assert len(lists) == 3 and "cursor" not in lists[0].query and lists[1].query["cursor"]
    assert {r.query["limit"][0] for r in lists} == {"100"}


def test_the_reconcile_read_cannot_say_past_its_pages(server, monkeypatch):
    from connectors.vendors.bluesky import driver as module

    monkeypatch.setattr(module, "FIND_PAGES", 2)
    driver = make_driver()
    for n in range(250):
        server.add_post(f"note {n}", "2026-12-04T10:00:00.000Z")
    with pytest.raises(DriverError, match="longer than 2 pages") as raised:
        driver.call("bluesky.post.find", POST, call(server, "bluesky.post.find"))
    assert raised.value.retryable is False  # not "did not happen": an operator settles it


def test_a_wrong_app_password_names_blueskys_message(server):
    with pytest.raises(DriverError) as raised:
        make_driver().call("bluesky.post.create", POST, call(server, password="wrong-one"))
    err = raised.value
    assert str(err) == f"bluesky answered 401 to POST {SESSION}: Invalid identifier or password"
    assert (err.vendor_code, err.retryable) == ("AuthenticationRequired", False) and not server.posts()


def test_a_rate_limit_says_when_the_window_resets(server):
    driver = make_driver()
    server.rate_limited(reset_in=40, path=CREATE)
    with pytest.raises(DriverError) as raised:
        driver.call("bluesky.post.create", POST, call(server))
    err = raised.value
    assert (err.status, err.vendor_code, err.retryable) == (429, "RateLimitExceeded", True)
    assert 38 <= (err.retry_after or 0) <= 41 and "Rate Limit Exceeded" in str(err)
    server.rate_limited(reset_in=40, path=CREATE, retry_after=True)
    with pytest.raises(DriverError) as again:
        driver.call("bluesky.post.create", POST, call(server))
    assert again.value.retry_after == 40.0


def test_an_invalid_record_is_refused_with_blueskys_message(server):
    with pytest.raises(DriverError) as raised:
        make_driver().call("bluesky.post.create", PostRequest.model_construct(text="x" * 301, langs=[]), call(server))
    assert "Record/text must not be longer than 300 graphemes" in str(raised.value)
    assert raised.value.vendor_code == "InvalidRequest"


def test_the_credentials_are_asked_for_by_name_before_anything_is_sent(server):
    with pytest.raises(DriverError, match="BLUESKY_IDENTIFIER, BLUESKY_APP_PASSWORD must be set"):
        make_driver().call("bluesky.post.create", POST, CallContext(idempotency_key="k", run_id="r", op_id="x"))
    bad = CallContext(idempotency_key="k", run_id="r", op_id="x",
                      secrets={"BLUESKY_IDENTIFIER": HANDLE, "BLUESKY_APP_PASSWORD": "p", "BLUESKY_SERVICE": "ftp://x"})
    with pytest.raises(DriverError, match="BLUESKY_SERVICE must be an https:// URL"):
        make_driver().call("bluesky.post.create", POST, bad)
    assert not server.received


def test_created_at_is_an_atproto_datetime_that_tells_calls_apart():
    at = datetime(2026, 12, 4, 21, 5, 7, tzinfo=UTC)
    mine = stamp.created_at("run-1:3", at)
    assert mine.startswith("2026-12-04T21:05:07.") and len(mine) == len("2026-12-04T21:05:07.123456Z")
    assert stamp.created_at("run-1:3", at) == mine != stamp.created_at("run-1:4", at)
    assert stamp.made_by({"text": "hi", "createdAt": mine}, "run-1:3", "hi")
    assert not stamp.made_by({"text": "hi!", "createdAt": mine}, "run-1:3", "hi")
    assert not stamp.made_by({"text": "hi", "createdAt": mine}, "run-1:4", "hi")


def test_links_become_facets_by_their_byte_offsets():
    text = "Ünïcode first, then https://a.example/x. and http://b.example"
    found = facets(text)
    assert [text.encode()[f["index"]["byteStart"]:f["index"]["byteEnd"]].decode() for f in found] == [
        "https://a.example/x", "http://b.example"]
