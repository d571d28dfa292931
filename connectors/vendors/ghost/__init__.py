"""Ghost, the publishing platform: write a draft post and publish it, over its Admin API.

Its connector (`connector.py`), models (`models.py`), Admin API token (`auth.py`), real driver
(`driver.py`) and fake (`fake.py`). A company lists `ghost` in its `sanoma_config.py`; its driver
reads `GHOST_ADMIN_URL` and `GHOST_ADMIN_API_KEY`.
"""
from __future__ import annotations

from connectors.operations import with_setup
from connectors.vendors.ghost.connector import LOGO, GhostEnvironment, ghost
from connectors.vendors.ghost.driver import make_driver
from connectors.vendors.ghost.fake import initial_state, make_fake
from connectors.vendors.ghost.models import DraftRequest, FoundPost, Post, PostRef

# The halves attach to `ghost` itself: every module importing it sees them.
with_setup(ghost, driver=make_driver, fake=make_fake)

__all__ = [
    "DraftRequest",
    "FoundPost",
    "GhostEnvironment",
    "LOGO",
    "Post",
    "PostRef",
    "ghost",
    "initial_state",
    "make_driver",
    "make_fake",
]
