"""Ghost's fake: posts kept as Ghost keeps them (ids of 24 hex digits, unique slugs, `updated_at`),
every draft sent written anew (Ghost takes no idempotency key), a published post left as it is."""
from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from connectors.drivers import CallContext
from connectors.errors import DriverError
from connectors.fakes import define_fake
from connectors.vendors.ghost.connector import ghost
from connectors.vendors.ghost.models import DraftRequest, PostRef

SITE = "https://blog.example.com"


def _stamp() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _view(post: dict[str, Any]) -> dict[str, Any]:
    return {"post_id": post["id"], "title": post["title"], "slug": post["slug"], "status": post["status"],
            "url": post["url"], "updated_at": post["updated_at"], "published_at": post["published_at"]}


def free_slug(posts: dict[str, Any], slug: str) -> str:
    """`slug`, or as Ghost does when it is taken, `slug-2`, `slug-3`, ..."""
    taken = {p["slug"] for p in posts.values()}
    n, found = 1, slug
    while found in taken:
        n += 1
        found = f"{slug}-{n}"
    return found


def _create(state: dict, i: DraftRequest, c: CallContext) -> dict:
    state["next"] = state.get("next", 0) + 1
    post_id = hashlib.sha256(f"post-{state['next']}".encode()).hexdigest()[:24]
    slug = free_slug(state["posts"], i.slug)
    state["posts"][post_id] = {"id": post_id, "title": i.title, "html": i.html, "slug": slug, "status": "draft",
                               "url": f"{SITE}/p/{post_id}/", "updated_at": _stamp(), "published_at": None}
    return _view(state["posts"][post_id])


def _find(state: dict, i: DraftRequest, c: CallContext) -> dict:
    post = next((p for p in state["posts"].values() if p["slug"] == i.slug), None)
    if post is None:
        return {"happened": False}
    if post["title"] != i.title:
        raise DriverError(f"fake ghost: the post at {i.slug} is titled {post['title']!r}, not {i.title!r}",
                          retryable=False)
    return {"happened": True, "output": _view(post)}


def _publish(state: dict, i: PostRef, c: CallContext) -> dict:
    post = state["posts"].get(i.post_id)
    if post is None:
        raise DriverError("Resource not found error, cannot read post.", status=404, vendor_code="NotFoundError")
    if post["status"] != "published":
        now = _stamp()
        post.update(status="published", published_at=now, updated_at=now, url=f"{SITE}/{post['slug']}/")
    return _view(post)


def initial_state() -> dict:
    return {"posts": {}, "next": 0}


def make_fake(file: Path | None = None):
    return define_fake(ghost, initial=initial_state,
                       ops={"post": {"create": _create, "find": _find, "publish": _publish}}, file=file)
