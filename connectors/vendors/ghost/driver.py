"""Ghost's real driver: its Admin API over `connectors.http`, with `GHOST_ADMIN_URL` and
`GHOST_ADMIN_API_KEY` read from the call's secrets.

- `post.create` sends `POST /ghost/api/admin/posts/?source=html` once (Ghost takes no idempotency
  key); `post.find` reads `GET /ghost/api/admin/posts/slug/{slug}/` to say whether it was written.
- `post.publish` reads the post and, unless it is published already, sends
  `PUT /ghost/api/admin/posts/{id}/` with the `updated_at` it read (Ghost refuses a stale one with
  409 `UpdateCollisionError`, retryable: the next try reads it again).
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from connectors.drivers import CallContext, Driver, define_driver
from connectors.errors import DriverError
from connectors.http import VendorFault, VendorHTTP, join_url, require_secrets
from connectors.vendors.ghost.auth import admin_token
from connectors.vendors.ghost.connector import check_base_url, ghost
from connectors.vendors.ghost.models import DraftRequest, PostRef

if TYPE_CHECKING:
    import httpx

API = "/ghost/api/admin"
ACCEPT_VERSION = "v5.0"


def read_error(response: httpx.Response) -> VendorFault | None:
    """Ghost's error body: `{"errors": [{"message", "context", "type", ...}]}`."""
    errors = response.json()["errors"]
    first = errors[0]
    message = str(first.get("message") or "")
    if first.get("context"):
        message = f"{message} ({first['context']})" if message else str(first["context"])
    return VendorFault(message, first.get("type"))


def post_of(raw: dict[str, Any]) -> dict[str, Any]:
    """A post as Ghost answers it, in the operations' shape."""
    return {"post_id": raw["id"], "title": raw.get("title") or "", "slug": raw["slug"], "status": raw["status"],
            "url": raw.get("url") or "", "updated_at": raw["updated_at"], "published_at": raw.get("published_at")}


def first_post(answer: Any, what: str) -> dict[str, Any]:
    """The post of Ghost's answer `{"posts": [post]}`, in the operations' shape; a final error when
    the answer is not of that shape."""
    try:
        return post_of(answer["posts"][0])
    except (TypeError, KeyError, IndexError):
        raise DriverError(f"ghost's answer to {what} has no post", retryable=False) from None


class GhostDriver:
    """One connection pool; the site and the key come with each call."""

    def __init__(self, transport: httpx.BaseTransport | None = None) -> None:
        self.http = VendorHTTP("ghost", read_error=read_error, headers={"Accept-Version": ACCEPT_VERSION},
                               transport=transport)

    def _send(self, method: str, path: str, c: CallContext, **kwargs: Any) -> Any:
        found = require_secrets("ghost", c, "GHOST_ADMIN_URL", "GHOST_ADMIN_API_KEY")
        try:
            base = check_base_url(found["GHOST_ADMIN_URL"])
            token = admin_token(found["GHOST_ADMIN_API_KEY"], now=int(time.time()))
        except ValueError as err:
            raise DriverError(f"ghost: {err}", retryable=False) from None
        return self.http.json(method, join_url(base, API + path), context=c,
                              headers={"Authorization": f"Ghost {token}"}, **kwargs)

    def create(self, i: DraftRequest, c: CallContext) -> dict[str, Any]:
        body = {"posts": [{"title": i.title, "html": i.html, "slug": i.slug, "status": "draft"}]}
        return first_post(self._send("POST", "/posts/", c, json=body, params={"source": "html"}), "a new draft")

    def find(self, i: DraftRequest, c: CallContext) -> dict[str, Any]:
        try:
            answer = self._send("GET", f"/posts/slug/{i.slug}/", c)
        except DriverError as err:
            if err.status == 404:
                return {"happened": False}
            raise
        post = first_post(answer, f"the post at {i.slug}")
        if post["title"] != i.title:
            # Another post holds the slug: Ghost would have given this draft another one (`-2`).
            raise DriverError(f"ghost: the post at {i.slug} is titled {post['title']!r}, not {i.title!r}: "
                              f"whether the draft was written cannot be told by its slug", retryable=False)
        return {"happened": True, "output": post}

    def publish(self, i: PostRef, c: CallContext) -> dict[str, Any]:
        post = first_post(self._send("GET", f"/posts/{i.post_id}/", c), f"post {i.post_id}")
        if post["status"] == "published":
            return post  # publishing a published post changes nothing
        body = {"posts": [{"status": "published", "updated_at": post["updated_at"]}]}
        try:
            answer = self._send("PUT", f"/posts/{i.post_id}/", c, json=body)
        except DriverError as err:
            if err.vendor_code == "UpdateCollisionError":  # edited since it was read: read it again
                raise DriverError(str(err), status=err.status, vendor_code=err.vendor_code, retryable=True) from None
            raise
        return first_post(answer, f"publishing post {i.post_id}")


def make_driver(transport: httpx.BaseTransport | None = None) -> Driver:
    driver = GhostDriver(transport)
    return define_driver(ghost, {"post": {"create": driver.create, "find": driver.find, "publish": driver.publish}})
