"""What Resend's broadcast operations take and answer."""
from __future__ import annotations

from pydantic import BaseModel, Field, model_validator


class BroadcastDraft(BaseModel):
    """A broadcast to create as a draft: who it is from, to which segment, and what it says."""

    segment_id: str = Field(min_length=1, description="the segment (formerly audience) it goes to")
    sender: str = Field(min_length=3, description='its From: "Acme <news@acme.example>"')
    subject: str = Field(min_length=1)
    name: str = Field(default="", description="a name to find it by in Resend's dashboard")
    html: str = ""
    text: str = ""
    reply_to: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _has_a_body(self) -> BroadcastDraft:
        if not self.html and not self.text:
            raise ValueError("a broadcast needs html or text")
        return self


class Broadcast(BaseModel):
    broadcast_id: str


class BroadcastSend(BaseModel):
    """Send a draft broadcast now, or at `scheduled_at` (ISO 8601, or Resend's "in 1 hour")."""

    broadcast_id: str = Field(min_length=1)
    scheduled_at: str | None = None


class BroadcastSent(BaseModel):
    broadcast_id: str


class BroadcastRef(BaseModel):
    broadcast_id: str = Field(min_length=1)


class BroadcastState(BaseModel):
    """A broadcast as Resend shows it: `draft`, then `queued`/`scheduled`, `sending`, `sent`."""

    broadcast_id: str
    name: str = ""
    status: str
    subject: str = ""
    segment_id: str | None = None
    scheduled_at: str | None = None
    sent_at: str | None = None


class FoundSend(BaseModel):
    """Whether a broadcast was sent (the reconcile read of `resend.broadcast.send`)."""

    happened: bool
    output: BroadcastSent | None = None


# Statuses a broadcast has once a send was accepted.
SENT_STATUSES = ("queued", "scheduled", "sending", "sent")
