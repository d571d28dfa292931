"""Where approvals are announced: `slack_channel("#approvals")` in a company's `SanomaConfig`.

    config = SanomaConfig(app_name="acme", connectors=[shop, slack],
                          announce_approvals=slack_channel("#approvals", desk="https://desk.acme.example"))

Plain Python (no Django model), so `sanoma_config.py` can be read anywhere. The announcement is a
call of the connector's post operation (`slack.message.post`), made by the worker after the
approval is committed (`runs.approvals.announce`); the config must list that connector.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from connectors.errors import Problem, ProblemKind

SLACK_POST = "slack.message.post"


@dataclass(frozen=True)
class AnnounceTo:
    """A channel approvals are announced in: the operation that posts there and the channel it names.

    `desk` is the desk's public address (`https://desk.acme.example`): each announcement links to
    its approval there; without it the link is under the site's own address (SANOMA_SITE_URL), and
    a site with neither refuses the config (the system check sanoma.E013)."""

    op: str
    channel: str
    desk: str = ""

    def message(self, text: str) -> dict[str, Any]:
        """The post's input for an announcement saying `text`."""
        return {"channel": self.channel, "text": text}


def slack_channel(channel: str, *, desk: str = "") -> AnnounceTo:
    """Announce each approval asked in a Slack channel, `#name` or its ID (`C0123ABC`)."""
    if not isinstance(channel, str) or not channel.strip() or len(channel) > 80:
        raise ValueError(f"slack_channel takes a channel's #name or ID; got {channel!r}")
    if desk and not desk.startswith(("https://", "http://")):
        raise ValueError(f"slack_channel(desk=...) is the desk's address, https://...; got {desk!r}")
    return AnnounceTo(op=SLACK_POST, channel=channel.strip(), desk=desk.rstrip("/"))


def announce_problems(target: Any, ops: dict[str, Any]) -> list[Problem]:
    """What is wrong with a config's `announce_approvals` (nothing: an empty list)."""
    if target is None:
        return []
    if not isinstance(target, AnnounceTo):
        return [Problem(f"announce_approvals takes slack_channel(\"#channel\"); got {type(target).__name__}",
                        kind=ProblemKind.CONFIG_FILE, file="sanoma_config.py")]
    if target.op not in ops:
        vendor = target.op.split(".")[0]
        return [Problem(f"announce_approvals posts with {target.op}, which no connector in the config declares: "
                        f"add the {vendor} connector to connectors (from connectors.vendors.{vendor} import {vendor})",
                        kind=ProblemKind.CONFIG_FILE, file="sanoma_config.py")]
    return []
