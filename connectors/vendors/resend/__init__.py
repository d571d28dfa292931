"""Resend: broadcasts (marketing email to a segment), created as drafts and then sent.

`resend.broadcast.create` (write) and `resend.broadcast.send` (send), with the reads
`resend.broadcast.get` and `resend.broadcast.find` (the send's reconcile read); the real driver
reads `RESEND_API_KEY` (and `RESEND_API_URL`, for a test server). See docs/guides/vendors/resend.md.
"""
from __future__ import annotations

from connectors import with_setup
from connectors.vendors.resend.connector import LOGO, ResendEnvironment, resend
from connectors.vendors.resend.driver import make_driver
from connectors.vendors.resend.fake import SEGMENT, initial_state, make_fake
from connectors.vendors.resend.models import (
    Broadcast,
    BroadcastDraft,
    BroadcastRef,
    BroadcastSend,
    BroadcastSent,
    BroadcastState,
    FoundSend,
)

with_setup(resend, driver=make_driver, fake=make_fake)

__all__ = [
    "LOGO",
    "SEGMENT",
    "Broadcast",
    "BroadcastDraft",
    "BroadcastRef",
    "BroadcastSend",
    "BroadcastSent",
    "BroadcastState",
    "FoundSend",
    "ResendEnvironment",
    "initial_state",
    "make_driver",
    "make_fake",
    "resend",
]
