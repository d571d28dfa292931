"""Resend's connector: broadcasts created as drafts, then sent (or scheduled).

Resend honours an `Idempotency-Key` only on its email endpoints (`POST /emails`, `/emails/batch`),
not on broadcasts: creating and sending a broadcast are therefore declared `idempotency_key="ignored"`
and never sent twice blindly. A send whose reply was lost is in doubt, settled by reading the
broadcast (`resend.broadcast.find`: a broadcast past `draft` was sent); a create whose reply was
lost waits for an operator (a second draft is harmless, but nothing guesses which one is meant).
"""
from __future__ import annotations

from pydantic import BaseModel, Field

from connectors import VendorInfo, define_connector, op
from connectors.vendors.resend.models import (
    Broadcast,
    BroadcastDraft,
    BroadcastRef,
    BroadcastSend,
    BroadcastSent,
    BroadcastState,
    FoundSend,
)

LOGO = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
        '<rect width="16" height="16" rx="3" fill="#000"/>'
        '<path d="M5 4h4a2.5 2.5 0 0 1 0 5H8l3 3H9L6 9v3H5z" fill="#fff"/></svg>')

DEFAULT_API_URL = "https://api.resend.com"


class ResendEnvironment(BaseModel):
    """What Resend's real driver reads."""

    RESEND_API_KEY: str = Field(min_length=8, description="a Resend API key with full access (re_...)")
    RESEND_API_URL: str | None = Field(default=None, description=f"the API's base URL (default {DEFAULT_API_URL})")


resend = define_connector(
    "resend",
    {
        "broadcast": {
            "create": op(effect="write", input=BroadcastDraft, output=Broadcast, idempotency_key="ignored",
                         target=lambda i: f"segment/{i.segment_id}", description="Create a draft broadcast",
                         summary="Draft the broadcast {subject} to segment {segment_id}",
                         expect="a broadcast {subject} was drafted"),
            "send": op(effect="send", input=BroadcastSend, output=BroadcastSent, idempotency_key="ignored",
                       reconcile="find", target=lambda i: f"broadcast/{i.broadcast_id}",
                       description="Send a draft broadcast to its segment",
                       summary="Send broadcast {broadcast_id} to its segment",
                       expect="broadcast {broadcast_id} was sent"),
            "find": op(effect="read", input=BroadcastSend, output=FoundSend, idempotent=True, idempotency_key="ignored",
                       target=lambda i: f"broadcast/{i.broadcast_id}",
                       description="Whether a broadcast was sent", summary="Look whether {broadcast_id} was sent"),
            "get": op(effect="read", input=BroadcastRef, output=BroadcastState, idempotent=True,
                      idempotency_key="ignored",
                      target=lambda i: f"broadcast/{i.broadcast_id}", description="Read a broadcast",
                      summary="Read broadcast {broadcast_id}"),
        },
    },
    info=VendorInfo(title="Resend", logo=LOGO, homepage="https://resend.com"),
    environment=ResendEnvironment,
)
