"""A Bluesky PDS on a local port, answering the XRPC endpoints the driver uses as the AT Protocol
documents them: `com.atproto.server.createSession` (identifier and app password, an access token
with its `exp`), `com.atproto.repo.createRecord` (every call a new record: no idempotency key is
read), `com.atproto.repo.listRecords` (newest first, pages of at most 100 with a `cursor`), errors
as `{"error", "message"}`, and rate-limit headers (`ratelimit-limit`, `-remaining`, `-reset`,
`-policy`) on every answer."""
from __future__ import annotations

import base64
import hashlib
import itertools
import json
import re
import threading
import time
from typing import Any

from connectors.http.vendor_server import Answer, Received, VendorServer

HANDLE = "acme.bsky.social"
DID = "did:plc:ewvi7nxzyoun6zhxrhs64oiz"
APP_PASSWORD = "abcd-efgh-ijkl-mnop"
POSTS = "app.bsky.feed.post"
TOKEN_LIFE = 7200  # seconds
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
_TID_CHARS = "234567abcdefghijklmnopqrstuvwxyz"


def xrpc_error(status: int, error: str, message: str, headers: dict[str, str] | None = None) -> Answer:
    return Answer(status, {"error": error, "message": message}, dict(headers or {}))


def _b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


class BlueskyServer(VendorServer):
    """One account (`HANDLE`, `DID`, `APP_PASSWORD`) on a PDS."""

    def __init__(self, *, rate_limit: int = 5000) -> None:
        super().__init__("bluesky")
        self.records: list[dict[str, Any]] = []  # oldest first
        self.tokens: dict[str, float] = {}  # access token -> its expiry
        self.limit = rate_limit
        self.lose_replies = 0  # the next createRecord calls are made, then their connection dropped
        self._clock = itertools.count(int(time.time() * 1_000_000))
        self._records_lock = threading.Lock()
        self.route("POST", "/xrpc/com.atproto.server.createSession")(self._create_session)
        self.route("POST", "/xrpc/com.atproto.repo.createRecord")(self._create_record)
        self.route("GET", "/xrpc/com.atproto.repo.listRecords")(self._list_records)

    # ---- faults as Bluesky answers them -------------------------------------------------------

    def rate_limited(self, *, reset_in: float, path: str | None = None, retry_after: bool = False) -> None:
        """The next request (to `path`) is refused 429 with Bluesky's headers: when the window resets,
        and `Retry-After` too when asked."""
        headers = self._limits(remaining=0, reset=time.time() + reset_in)
        if retry_after:
            headers["Retry-After"] = f"{reset_in:g}"
        self.fault(status=429, body={"error": "RateLimitExceeded", "message": "Rate Limit Exceeded"},
                   headers=headers, path=path)

    def unavailable(self, *, path: str | None = None, times: int = 1) -> None:
        self.fault(status=503, body={"error": "InternalServerError", "message": "Service Unavailable"}, path=path,
                   times=times)

    def posts(self) -> list[dict[str, Any]]:
        with self._records_lock:
            return [dict(r["value"]) for r in self.records]

    def add_post(self, text: str, created_at: str) -> None:
        """A post made elsewhere (the app, another client)."""
        with self._records_lock:
            self._store({"$type": POSTS, "text": text, "createdAt": created_at})

    # ---- serving ------------------------------------------------------------------------------

    def _serve(self, received: Received) -> Answer | None:
        answer = super()._serve(received)
        if received.path.endswith("createRecord") and answer is not None and answer.status == 200:
            with self._records_lock:
                if self.lose_replies > 0:
                    self.lose_replies -= 1
                    return None  # the post is made; its reply never reaches the caller
        if answer is not None:
            answer.headers = {**self._limits(), **answer.headers}
        return answer

    def _limits(self, *, remaining: int | None = None, reset: float | None = None) -> dict[str, str]:
        return {"ratelimit-limit": str(self.limit),
                "ratelimit-remaining": str(self.limit - len(self.received) if remaining is None else remaining),
                "ratelimit-reset": str(int(reset if reset is not None else time.time() + 300)),
                "ratelimit-policy": f"{self.limit};w=300"}

    def _authorized(self, request: Received) -> Answer | None:
        header = request.header("Authorization") or ""
        if not header.startswith("Bearer "):
            return xrpc_error(401, "AuthenticationRequired", "Authentication Required")
        expires = self.tokens.get(header[len("Bearer "):])
        if expires is None:
            return xrpc_error(400, "InvalidToken", "Token could not be verified")
        if expires <= time.time():
            return xrpc_error(400, "ExpiredToken", "Token has expired")
        return None

    def _create_session(self, request: Received, params: dict[str, str]) -> Answer:
        body = request.json() or {}
        if not body.get("identifier") or not body.get("password"):
            return xrpc_error(400, "InvalidRequest", 'Input must have the property "identifier" and "password"')
        if body["identifier"] not in (HANDLE, DID, "acme@example.com") or body["password"] != APP_PASSWORD:
            return xrpc_error(401, "AuthenticationRequired", "Invalid identifier or password")
        exp = int(time.time()) + TOKEN_LIFE
        claims = {"scope": "com.atproto.appPass", "sub": DID, "exp": exp}
        signature = hashlib.sha256(str(len(self.tokens)).encode()).hexdigest()[:43]
        token = f"{_b64({'typ': 'at+jwt', 'alg': 'ES256K'})}.{_b64(claims)}.{signature}"
        self.tokens[token] = exp
        return Answer(200, {"did": DID, "handle": HANDLE, "email": "acme@example.com", "accessJwt": token,
                            "refreshJwt": token + "r", "active": True})

    def _tid(self) -> str:
        """A record key as the PDS makes one: a timestamp in microseconds, in sortable base32."""
        n, out = next(self._clock) << 10, ""
        for _ in range(13):
            out = _TID_CHARS[n & 31] + out
            n >>= 5
        return out

    def _store(self, record: dict[str, Any]) -> dict[str, Any]:
        rkey = self._tid()
        item = {"uri": f"at://{DID}/{POSTS}/{rkey}", "rkey": rkey,
                "cid": "bafyrei" + hashlib.sha256(json.dumps(record, sort_keys=True).encode() + rkey.encode())
                .hexdigest()[:52], "value": record}
        self.records.append(item)
        return item

    def _create_record(self, request: Received, params: dict[str, str]) -> Answer:
        refused = self._authorized(request)
        if refused is not None:
            return refused
        body = request.json() or {}
        if body.get("repo") not in (DID, HANDLE):
            return xrpc_error(400, "InvalidRequest", f"Could not find repo: {body.get('repo')}")
        record = body.get("record") or {}
        if body.get("collection") != POSTS or record.get("$type") != POSTS:
            return xrpc_error(400, "InvalidRequest", "Invalid record: $type must match the collection")
        text = record.get("text")
        if not isinstance(text, str):
            return xrpc_error(400, "InvalidRequest", "Invalid app.bsky.feed.post record: Record must have the "
                                                     'property "text"')
        if len(text) > 300 or len(text.encode()) > 3000:
            return xrpc_error(400, "InvalidRequest", "Invalid app.bsky.feed.post record: Record/text must not be "
                                                     "longer than 300 graphemes")
        if not _DATETIME.match(str(record.get("createdAt") or "")):
            return xrpc_error(400, "InvalidRequest", "Invalid app.bsky.feed.post record: Record/createdAt must be "
                                                     "an valid atproto datetime (both RFC-3339 and ISO-8601)")
        with self._records_lock:
            item = self._store(record)
        return Answer(200, {"uri": item["uri"], "cid": item["cid"],
                            "commit": {"cid": "bafyreicommit" + item["rkey"], "rev": item["rkey"]},
                            "validationStatus": "valid"})

    def _list_records(self, request: Received, params: dict[str, str]) -> Answer:
        query = {k: v[-1] for k, v in request.query.items()}
        if query.get("repo") not in (DID, HANDLE):
            return xrpc_error(400, "InvalidRequest", f"Could not find repo: {query.get('repo')}")
        if not query.get("collection"):
            return xrpc_error(400, "InvalidRequest", 'Error: Params must have the property "collection"')
        try:
            limit = int(query.get("limit", "50"))
        except ValueError:
            return xrpc_error(400, "InvalidRequest", "Error: limit must be an integer")
        if not 1 <= limit <= 100:
            return xrpc_error(400, "InvalidRequest", "Error: limit can not be greater than 100"
                              if limit > 100 else "Error: limit can not be less than 1")
        reverse = query.get("reverse") == "true"
        cursor = query.get("cursor")
        with self._records_lock:
            found = [r for r in self.records if r["uri"].split("/")[3] == query["collection"]]
        found.sort(key=lambda r: r["rkey"], reverse=not reverse)  # newest first unless reversed
        if cursor:
            found = [r for r in found if (r["rkey"] > cursor if reverse else r["rkey"] < cursor)]
        page = found[:limit]
        answer: dict[str, Any] = {"records": [{"uri": r["uri"], "cid": r["cid"], "value": r["value"]} for r in page]}
        if len(found) > limit:
            answer["cursor"] = page[-1]["rkey"]
        return Answer(200, answer)
