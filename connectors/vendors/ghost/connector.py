"""Ghost's connector: write a draft post, publish it, and the read that finds a draft by its slug.

Ghost's Admin API takes no idempotency key: a draft sent twice is written twice, so a draft whose
reply was lost is in doubt and settled by looking it up by its slug. Publishing is idempotent: a
published post is left as it is.
"""
from __future__ import annotations

import re

from pydantic import BaseModel, Field, field_validator

from connectors.operations import VendorInfo, define_connector, op
from connectors.vendors.ghost.models import DraftRequest, FoundPost, Post, PostRef

LOGO = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
        '<rect width="16" height="16" rx="3" fill="#15171a"/><circle cx="8" cy="8" r="3" fill="#fff"/></svg>')

_LOCAL = re.compile(r"^http://(localhost|127\.0\.0\.1)(:\d+)?(/.*)?$")


def check_base_url(value: str) -> str:
    """An https:// URL (plain http only on this machine, for a local server)."""
    if not (value.startswith("https://") or _LOCAL.match(value)):
        raise ValueError("must be an https:// URL")
    return value.rstrip("/")


class GhostEnvironment(BaseModel):
    """What Ghost's driver reads (a worker on Ghost's fake needs none of it)."""

    GHOST_ADMIN_URL: str = Field(description="the site's address, e.g. https://blog.example.com")
    GHOST_ADMIN_API_KEY: str = Field(
        pattern=r"^[0-9a-f]{24}:[0-9a-f]{64}$",
        description="a custom integration's Admin API key, <id>:<secret> (the secret in hex)")

    @field_validator("GHOST_ADMIN_URL")
    @classmethod
    def _url(cls, value: str) -> str:
        return check_base_url(value)


ghost = define_connector(
    "ghost",
    {
        "post": {
            "create": op(effect="write", input=DraftRequest, output=Post, idempotency_key="ignored",
                         reconcile="find", target=lambda i: f"post/{i.slug}",
                         description="Write a draft post", summary="Write the Ghost draft {title}",
                         expect="the Ghost draft {slug} was written"),
            "find": op(effect="read", input=DraftRequest, output=FoundPost, idempotent=True,
                       target=lambda i: f"post/{i.slug}", description="Look up a draft by its slug",
                       summary="Look up the Ghost post {slug}"),
            "publish": op(effect="publish", input=PostRef, output=Post, idempotent=True,
                          target=lambda i: f"post/{i.post_id}", description="Publish a post (a published one stays)",
                          summary="Publish the Ghost post {post_id}", expect="the Ghost post {post_id} was published"),
        },
    },
    info=VendorInfo(title="Ghost", logo=LOGO, homepage="https://ghost.org"),
    environment=GhostEnvironment,
)
