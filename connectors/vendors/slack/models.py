"""What Slack's message operations take and answer."""
from __future__ import annotations

from pydantic import BaseModel, Field


class SlackMessage(BaseModel):
    """A message to a channel: its ID (`C0123ABC`) or its name (`#approvals`)."""

    channel: str = Field(min_length=1, max_length=80)
    text: str = Field(min_length=1, max_length=40_000)
    thread_ts: str | None = Field(default=None, description="the ts of the message to answer in its thread")


class Posted(BaseModel):
    """Where the message went: the channel's ID and the message's `ts` (its id in the channel)."""

    channel: str
    ts: str


class FoundPost(BaseModel):
    """Whether a post was made (the reconcile read of `slack.message.post`)."""

    happened: bool
    output: Posted | None = None


# What the driver puts in a post's metadata so a reconcile read can find it again.
MARKER_EVENT = "sanoma_call"
