"""Bluesky: make a post on an account, over the AT Protocol's XRPC endpoints.

Its connector (`connector.py`), models (`models.py`), the `createdAt` derived from a call
(`stamp.py`), real driver (`driver.py`) and fake (`fake.py`). A company lists `bluesky` in its
`sanoma_config.py`; its driver reads `BLUESKY_IDENTIFIER`, `BLUESKY_APP_PASSWORD` and, when the
account is not on bsky.social, `BLUESKY_SERVICE`.
"""
from __future__ import annotations

from connectors.operations import with_setup
from connectors.vendors.bluesky.connector import LOGO, BlueskyEnvironment, bluesky
from connectors.vendors.bluesky.driver import make_driver
from connectors.vendors.bluesky.fake import initial_state, make_fake
from connectors.vendors.bluesky.models import BlueskyPost, FoundBlueskyPost, PostRequest

# The halves attach to `bluesky` itself: every module importing it sees them.
with_setup(bluesky, driver=make_driver, fake=make_fake)

__all__ = [
    "BlueskyEnvironment",
    "BlueskyPost",
    "FoundBlueskyPost",
    "LOGO",
    "PostRequest",
    "bluesky",
    "initial_state",
    "make_driver",
    "make_fake",
]
