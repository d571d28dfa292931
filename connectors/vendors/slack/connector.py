"""Slack's connector: a message posted to a channel (`chat.postMessage`).

Slack has no idempotency key: a post sent twice is two messages. The post is declared
`idempotency_key="ignored"` with a reconcile read: the driver puts the call's key in the message's
metadata (`event_type: sanoma_call`), and `slack.message.find` looks for it in the channel's recent
history (`conversations.history`), so a post whose reply was lost is settled by reading the
channel, never sent again blindly.
"""
from __future__ import annotations

from pydantic import BaseModel, Field

from connectors import VendorInfo, define_connector, op
from connectors.vendors.slack.models import FoundPost, Posted, SlackMessage

LOGO = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
        '<rect width="16" height="16" rx="3" fill="#4a154b"/>'
        '<path d="M5 3v10M11 3v10M3 6h10M3 10h10" stroke="#fff" stroke-width="1.5"/></svg>')

DEFAULT_API_URL = "https://slack.com/api"


class SlackEnvironment(BaseModel):
    """What Slack's real driver reads."""

    SLACK_BOT_TOKEN: str = Field(min_length=8, description="a bot token (xoxb-...) with chat:write and "
                                                           "channels:history (and channels:read for #names)")
    SLACK_API_URL: str | None = Field(default=None, description=f"the Web API's base URL (default {DEFAULT_API_URL})")


slack = define_connector(
    "slack",
    {
        "message": {
            "post": op(effect="send", input=SlackMessage, output=Posted, idempotency_key="ignored",
                       reconcile="find", target=lambda i: f"channel/{i.channel.lstrip('#')}",
                       description="Post a message to a channel", summary="Post to {channel}: {text}",
                       expect="{channel} was posted {text}"),
            "find": op(effect="read", input=SlackMessage, output=FoundPost, idempotent=True, idempotency_key="ignored",
                       target=lambda i: f"channel/{i.channel.lstrip('#')}",
                       description="Whether a call's message is in a channel",
                       summary="Look for the message in {channel}"),
        },
    },
    info=VendorInfo(title="Slack", logo=LOGO, homepage="https://slack.com"),
    environment=SlackEnvironment,
)
