"""Slack: a message posted to a channel (`slack.message.post`, send), and the read that finds a
call's message again (`slack.message.find`); the real driver reads `SLACK_BOT_TOKEN` (and
`SLACK_API_URL`, for a test server). `slack_channel("#approvals")` announces each approval asked
there (`SanomaConfig(announce_approvals=...)`). See docs/guides/vendors/slack.md.
"""
from __future__ import annotations

from connectors import with_setup
from connectors.announcing import slack_channel
from connectors.vendors.slack.connector import LOGO, SlackEnvironment, slack
from connectors.vendors.slack.driver import make_driver
from connectors.vendors.slack.fake import initial_state, make_fake
from connectors.vendors.slack.models import MARKER_EVENT, FoundPost, Posted, SlackMessage

with_setup(slack, driver=make_driver, fake=make_fake)

__all__ = [
    "LOGO",
    "MARKER_EVENT",
    "FoundPost",
    "Posted",
    "SlackEnvironment",
    "SlackMessage",
    "initial_state",
    "make_driver",
    "make_fake",
    "slack",
    "slack_channel",
]
