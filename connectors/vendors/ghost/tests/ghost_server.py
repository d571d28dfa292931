"""Ghost's Admin API on a local port, answering as Ghost documents it: the `Ghost <token>`
authorization (an HS256 JWT checked against the integration's key: its `kid`, its `/admin/`
audience, its five-minute life), posts under `{"posts": [...]}`, unique slugs, pages with
`meta.pagination`, 409 `UpdateCollisionError` for an edit with a stale `updated_at`, and errors as
`{"errors": [{"message", "context", "type"}]}`."""
from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import json
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from connectors.http.vendor_server import Answer, Received, VendorServer
from connectors.vendors.ghost.fake import free_slug

API = "/ghost/api/admin"
KEY_ID = "6489c1f2a0b3c4d5e6f70812"
SECRET = "a3" * 32
ADMIN_API_KEY = f"{KEY_ID}:{SECRET}"


def error(status: int, type_: str, message: str, context: str | None = None) -> Answer:
    return Answer(status, {"errors": [{"message": message, "context": context, "type": type_,
                                       "details": None, "property": None, "help": None, "code": None,
                                       "id": "e" + hashlib.md5(message.encode()).hexdigest()[:8]}]})


def _unb64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


class GhostServer(VendorServer):
    """A Ghost site with one custom integration (`ADMIN_API_KEY`)."""

    def __init__(self, key: str = ADMIN_API_KEY) -> None:
        super().__init__("ghost")
        self.key_id, secret = key.split(":")
        self.secret = bytes.fromhex(secret)
        self.posts: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count(1)
        self._posts_lock = threading.Lock()
        self._last = datetime.now(UTC)
        self.edit_after_read: dict[str, dict[str, Any]] = {}  # post id -> an editor's save right after a read
        self.route("POST", f"{API}/posts/")(self._add)
        self.route("GET", f"{API}/posts/")(self._browse)
        self.route("GET", f"{API}/posts/slug/{{slug}}/")(self._read_slug)
        self.route("GET", f"{API}/posts/{{post_id}}/")(self._read)
        self.route("PUT", f"{API}/posts/{{post_id}}/")(self._edit)

    # ---- faults as Ghost answers them ---------------------------------------------------------

    def rate_limit(self, *, retry_after: float, method: str | None = None, path: str | None = None) -> None:
        self.fault(status=429, headers={"Retry-After": f"{retry_after:g}"}, method=method, path=path,
                   body=error(429, "TooManyRequestsError", "Too many requests.",
                              "Too many attempts, try again later.").body)

    def unavailable(self, *, method: str | None = None, path: str | None = None, times: int = 1) -> None:
        self.fault(status=503, body=error(503, "InternalServerError", "The server is temporarily unavailable.").body,
                   method=method, path=path, times=times)

    # ---- authorization ------------------------------------------------------------------------

    def _refused(self, request: Received) -> Answer | None:
        header = request.header("Authorization") or ""
        if not header.startswith("Ghost "):
            return error(403, "NoPermissionError", "Authorization failed",
                         "Unable to determine the authenticated user or integration. Check that cookies are being "
                         "passed through if using session authentication.")
        try:
            head, body, signature = header[len("Ghost "):].split(".")
            claims = json.loads(_unb64(body))
            kid = json.loads(_unb64(head)).get("kid")
            expected = hmac.new(self.secret, f"{head}.{body}".encode(), hashlib.sha256).digest()
        except ValueError:
            return error(401, "BadRequestError", "Invalid token", "jwt malformed")
        if json.loads(_unb64(head)).get("alg") != "HS256":
            return error(401, "BadRequestError", "Invalid token", "invalid algorithm")
        if kid != self.key_id:
            return error(401, "UnauthorizedError", "Unknown Admin API Key")
        if not hmac.compare_digest(expected, _unb64(signature)):
            return error(401, "UnauthorizedError", "Invalid token", "invalid signature")
        if claims.get("aud") != "/admin/":
            return error(401, "UnauthorizedError", "Invalid token", "jwt audience invalid. expected: /admin/")
        now = time.time()
        if not isinstance(claims.get("exp"), int) or claims["exp"] <= now:
            return error(401, "UnauthorizedError", "Invalid token", "jwt expired")
        if claims["exp"] - claims.get("iat", 0) > 300:
            return error(401, "UnauthorizedError", "Invalid token", "jwt maxAge exceeded")
        return None

    # ---- posts --------------------------------------------------------------------------------

    def _stamp(self) -> str:
        """Now, in milliseconds; each later than the last, as two edits never share an `updated_at`."""
        now = max(datetime.now(UTC), self._last + timedelta(milliseconds=1))
        self._last = now
        return now.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def _out(self, post: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in post.items() if k != "html"} | {"html": post["html"]}

    def _add(self, request: Received, params: dict[str, str]) -> Answer:
        refused = self._refused(request)
        if refused is not None:
            return refused
        try:
            [given] = request.json()["posts"]
        except (TypeError, KeyError, ValueError):
            return error(422, "ValidationError", "Validation error, cannot save post.",
                         "No root key ('posts') provided.")
        if not str(given.get("title") or "").strip():
            return error(422, "ValidationError", "Validation error, cannot save post.",
                         "Value in [posts.title] cannot be blank.")
        if given.get("status", "draft") not in ("draft", "published", "scheduled"):
            return error(422, "ValidationError", "Validation error, cannot save post.",
                         "Value in [posts.status] is not a valid status.")
        with self._posts_lock:
            post_id = hashlib.sha256(f"ghost-post-{next(self._ids)}".encode()).hexdigest()[:24]
            slug = free_slug(self.posts, given.get("slug") or given["title"].lower().replace(" ", "-"))
            now = self._stamp()
            published = given.get("status") == "published"
            self.posts[post_id] = {
                "id": post_id, "uuid": hashlib.md5(post_id.encode()).hexdigest(), "title": given["title"],
                "slug": slug, "html": given.get("html") if "source" in request.query else None,
                "status": given.get("status", "draft"), "created_at": now, "updated_at": now,
                "published_at": now if published else None,
                "url": f"{self.url}/{slug}/" if published else f"{self.url}/p/{post_id}/",
            }
            return Answer(201, {"posts": [self._out(self.posts[post_id])]})

    def _browse(self, request: Received, params: dict[str, str]) -> Answer:
        refused = self._refused(request)
        if refused is not None:
            return refused
        limit = int(request.query.get("limit", ["15"])[0])
        page = int(request.query.get("page", ["1"])[0])
        with self._posts_lock:
            every = sorted(self.posts.values(), key=lambda p: p["created_at"], reverse=True)
        pages = max(1, -(-len(every) // limit))
        chunk = every[(page - 1) * limit: page * limit]
        return Answer(200, {"posts": [self._out(p) for p in chunk], "meta": {"pagination": {
            "page": page, "limit": limit, "pages": pages, "total": len(every),
            "next": page + 1 if page < pages else None, "prev": page - 1 if page > 1 else None}}})

    def _read(self, request: Received, params: dict[str, str]) -> Answer:
        refused = self._refused(request)
        if refused is not None:
            return refused
        post = self.posts.get(params["post_id"])
        if post is None:
            return error(404, "NotFoundError", "Resource not found error, cannot read post.")
        answer = Answer(200, {"posts": [self._out(post)]})
        edit = self.edit_after_read.pop(params["post_id"], None)
        if edit is not None:
            self.edit_by_hand(params["post_id"], **edit)
        return answer

    def _read_slug(self, request: Received, params: dict[str, str]) -> Answer:
        refused = self._refused(request)
        if refused is not None:
            return refused
        post = next((p for p in self.posts.values() if p["slug"] == params["slug"]), None)
        if post is None:
            return error(404, "NotFoundError", "Resource not found error, cannot read post.")
        return Answer(200, {"posts": [self._out(post)]})

    def _edit(self, request: Received, params: dict[str, str]) -> Answer:
        refused = self._refused(request)
        if refused is not None:
            return refused
        with self._posts_lock:
            post = self.posts.get(params["post_id"])
            if post is None:
                return error(404, "NotFoundError", "Resource not found error, cannot edit post.")
            try:
                [given] = request.json()["posts"]
            except (TypeError, KeyError, ValueError):
                return error(422, "ValidationError", "Validation error, cannot edit post.",
                             "No root key ('posts') provided.")
            if "updated_at" not in given:
                return error(422, "ValidationError", "Validation error, cannot edit post.",
                             "Value in [posts.updated_at] is required.")
            if given["updated_at"] != post["updated_at"]:
                return error(409, "UpdateCollisionError", "Saving failed! Someone else is editing this post.")
            now = self._stamp()
            if given.get("status") == "published" and post["status"] != "published":
                post.update(status="published", published_at=now, url=f"{self.url}/{post['slug']}/")
            for field in ("title", "html"):
                if field in given:
                    post[field] = given[field]
            post["updated_at"] = now
            return Answer(200, {"posts": [self._out(post)]})

    def edit_by_hand(self, post_id: str, **changes: Any) -> None:
        """Someone edits the post in Ghost's editor: its `updated_at` moves on."""
        with self._posts_lock:
            self.posts[post_id].update(changes, updated_at=self._stamp())
