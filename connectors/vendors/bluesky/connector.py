"""Bluesky's connector: make a post on the account, and the read that finds it among its posts.

Bluesky takes no idempotency key: a post sent twice is posted twice. A post whose reply never came
back is in doubt, and settled by reading the account's recent posts for one with the call's text
and the `createdAt` the driver derives from the call (`stamp.created_at`).
"""
from __future__ import annotations

import re

from pydantic import BaseModel, Field, field_validator

from connectors.operations import VendorInfo, define_connector, op
from connectors.vendors.bluesky.models import BlueskyPost, FoundBlueskyPost, PostRequest

LOGO = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
        '<rect width="16" height="16" rx="3" fill="#1185fe"/>'
        '<path d="M4 5c1.5 1 3 3 4 5 1-2 2.5-4 4-5v3c0 1-1 2-2 2 1 .5 1 2-1 2.5L8 10l-1 2.5C5 12 5 10.5 6 10'
        'c-1 0-2-1-2-2z" fill="#fff"/></svg>')


_LOCAL = re.compile(r"^http://(localhost|127\.0\.0\.1)(:\d+)?(/.*)?$")


def check_service(value: str) -> str:
    """An https:// URL (plain http only on this machine, for a local server)."""
    if not (value.startswith("https://") or _LOCAL.match(value)):
        raise ValueError("must be an https:// URL")
    return value.rstrip("/")


class BlueskyEnvironment(BaseModel):
    """What Bluesky's driver reads (a worker on Bluesky's fake needs none of it)."""

    BLUESKY_IDENTIFIER: str = Field(min_length=3, description="the account's handle, DID or email")
    BLUESKY_APP_PASSWORD: str = Field(min_length=4, description="an app password made in the account's settings")
    BLUESKY_SERVICE: str = Field(default="https://bsky.social", description="the account's PDS")

    @field_validator("BLUESKY_SERVICE")
    @classmethod
    def _url(cls, value: str) -> str:
        return check_service(value)


bluesky = define_connector(
    "bluesky",
    {
        "post": {
            "create": op(effect="publish", input=PostRequest, output=BlueskyPost, idempotency_key="ignored",
                         reconcile="find", description="Post on the account",
                         summary="Post on Bluesky: {text}", expect="Bluesky has the post {text}"),
            "find": op(effect="read", input=PostRequest, output=FoundBlueskyPost, idempotent=True,
                       description="Look for a post among the account's recent posts",
                       summary="Look for the Bluesky post {text}"),
        },
    },
    info=VendorInfo(title="Bluesky", logo=LOGO, homepage="https://bsky.app"),
    environment=BlueskyEnvironment,
)
