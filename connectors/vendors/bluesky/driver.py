"""Bluesky's real driver: the AT Protocol's XRPC endpoints over `connectors.http`, with
`BLUESKY_IDENTIFIER`, `BLUESKY_APP_PASSWORD` and `BLUESKY_SERVICE` read from the call's secrets.

- A session (`com.atproto.server.createSession`) is made once and kept until its access token is
  about to expire: Bluesky limits how often an account may log in.
- `post.create` sends `com.atproto.repo.createRecord` once, an `app.bsky.feed.post` with the text,
  its links as link facets, and the `createdAt` derived from the call (`stamp`).
- `post.find` reads the account's posts, newest first (`com.atproto.repo.listRecords`, page by page
  with its cursor), for the call's post; it says it was not made only when it read them all, and
  cannot say (a final error: an operator settles it) past `FIND_PAGES` pages.

XRPC errors are `{"error", "message"}`; a 429 says when to try again by `Retry-After` or, as
Bluesky's limits do, `ratelimit-reset` (epoch seconds).
"""
from __future__ import annotations

import base64
import json
import re
import threading
import time
from typing import TYPE_CHECKING, Any

from connectors.drivers import CallContext, Driver, define_driver
from connectors.errors import DriverError
from connectors.http import VendorFault, VendorHTTP, join_url, pages, parse_retry_after, require_secrets
from connectors.vendors.bluesky import stamp
from connectors.vendors.bluesky.connector import bluesky, check_service
from connectors.vendors.bluesky.models import PostRequest

if TYPE_CHECKING:
    import httpx

DEFAULT_SERVICE = "https://bsky.social"
POSTS = "app.bsky.feed.post"
PAGE = 100  # listRecords' largest page
FIND_PAGES = 10  # the reconcile read looks at the latest 1,000 posts at most
SESSION_MARGIN = 60.0  # a session is made again this many seconds before its token expires
# What Bluesky answers a request whose access token it no longer takes: the session is made again.
STALE_SESSION = frozenset({"ExpiredToken", "InvalidToken", "AuthenticationRequired"})
_URL = re.compile(r"https?://[^\s<>\"]+")


def read_error(response: httpx.Response) -> VendorFault | None:
    """XRPC's error body: `{"error": "InvalidRequest", "message": "..."}`."""
    body = response.json()
    return VendorFault(str(body.get("message") or body["error"]), body.get("error"))


def read_wait(response: httpx.Response) -> float | None:
    """`Retry-After`, else `ratelimit-reset` (when the window resets, in epoch seconds)."""
    wait = parse_retry_after(response.headers.get("Retry-After"))
    if wait is not None:
        return wait
    reset = response.headers.get("ratelimit-reset")
    try:
        return max(0.0, float(reset) - time.time()) if reset else None
    except ValueError:
        return None


def facets(text: str) -> list[dict[str, Any]]:
    """The links in `text` as link facets, by their UTF-8 byte offsets (Bluesky links nothing on its own)."""
    found = []
    for match in _URL.finditer(text):
        url = match.group(0).rstrip(".,;:!?)")
        start = len(text[:match.start()].encode())
        found.append({"index": {"byteStart": start, "byteEnd": start + len(url.encode())},
                      "features": [{"$type": "app.bsky.richtext.facet#link", "uri": url}]})
    return found


def post_of(uri: str, cid: str, record: dict[str, Any]) -> dict[str, Any]:
    did, rkey = uri.removeprefix("at://").split("/")[0], uri.rsplit("/", 1)[-1]
    return {"uri": uri, "cid": cid, "url": f"https://bsky.app/profile/{did}/post/{rkey}", "text": record["text"],
            "created_at": record["createdAt"]}


def _expiry(token: str) -> float:
    """When an access token expires (its `exp`); in five minutes when it does not say."""
    try:
        payload = token.split(".")[1]
        return float(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["exp"])
    except (IndexError, ValueError, KeyError, TypeError):
        return time.time() + 300


class BlueskyDriver:
    """One connection pool, and the sessions made, by service and account."""

    def __init__(self, transport: httpx.BaseTransport | None = None) -> None:
        self.http = VendorHTTP("bluesky", read_error=read_error, read_wait=read_wait, transport=transport)
        self._sessions: dict[tuple[str, str, str], tuple[str, str, float]] = {}
        self._lock = threading.Lock()

    def _account(self, c: CallContext) -> tuple[str, str, str]:
        found = require_secrets("bluesky", c, "BLUESKY_IDENTIFIER", "BLUESKY_APP_PASSWORD")
        try:
            service = check_service(c.secrets.get("BLUESKY_SERVICE") or DEFAULT_SERVICE)
        except ValueError as err:
            raise DriverError(f"bluesky: BLUESKY_SERVICE {err}", retryable=False) from None
        return service, found["BLUESKY_IDENTIFIER"], found["BLUESKY_APP_PASSWORD"]

    def session(self, c: CallContext) -> tuple[str, str, str]:
        """The service, the account's DID and an access token, logging in when there is no fresh one."""
        account = self._account(c)
        service, identifier, password = account
        with self._lock:
            kept = self._sessions.get(account)
        if kept is not None and kept[2] - SESSION_MARGIN > time.time():
            return service, kept[0], kept[1]
        made = self.http.json("POST", join_url(service, "/xrpc/com.atproto.server.createSession"), context=c,
                              json={"identifier": identifier, "password": password})
        did, token = made["did"], made["accessJwt"]
        with self._lock:
            self._sessions[account] = (did, token, _expiry(token))
        return service, did, token

    def _authorized(self, method: str, url: str, c: CallContext, token: str, **kwargs: Any) -> Any:
        """A request with the session's token. A token Bluesky no longer takes (revoked, or expired
        before its time) is forgotten, so the next call logs in again; this one fails."""
        try:
            return self.http.json(method, url, context=c, headers={"Authorization": f"Bearer {token}"}, **kwargs)
        except DriverError as err:
            if err.vendor_code in STALE_SESSION:
                with self._lock:
                    self._sessions = {k: v for k, v in self._sessions.items() if v[1] != token}
            raise

    def create(self, i: PostRequest, c: CallContext) -> dict[str, Any]:
        service, did, token = self.session(c)
        record: dict[str, Any] = {"$type": POSTS, "text": i.text, "createdAt": stamp.created_at(c.idempotency_key)}
        links = facets(i.text)
        if links:
            record["facets"] = links
        if i.langs:
            record["langs"] = list(i.langs)
        made = self._authorized("POST", join_url(service, "/xrpc/com.atproto.repo.createRecord"), c, token,
                                json={"repo": did, "collection": POSTS, "record": record})
        return post_of(made["uri"], made["cid"], record)

    def find(self, i: PostRequest, c: CallContext) -> dict[str, Any]:
        service, did, token = self.session(c)
        url = join_url(service, "/xrpc/com.atproto.repo.listRecords")

        def page(cursor: str | None) -> tuple[list[Any], str | None]:
            params = {"repo": did, "collection": POSTS, "limit": PAGE, **({"cursor": cursor} if cursor else {})}
            answer = self._authorized("GET", url, c, token, params=params)
            records = answer.get("records") or []
            return records, (answer.get("cursor") or None) if records else None

        for item in pages(page, max_pages=FIND_PAGES, vendor="bluesky"):
            if stamp.made_by(item.get("value") or {}, c.idempotency_key, i.text):
                return {"happened": True, "output": post_of(item["uri"], item["cid"], item["value"])}
        return {"happened": False}


def make_driver(transport: httpx.BaseTransport | None = None) -> Driver:
    driver = BlueskyDriver(transport)
    return define_driver(bluesky, {"post": {"create": driver.create, "find": driver.find}})
