"""The system check of a config's announcements (sanoma.E013): each one links to its approval in
the desk, and a link in Slack is clickable only when it is absolute, so the desk's address must be
known, from `slack_channel(..., desk=...)` or the site's own `SANOMA_SITE_URL`."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error

HINT = ("Set SANOMA_SITE_URL to the site's address (https://sanoma.example.com), or name the desk in the "
        "config: slack_channel(\"#approvals\", desk=\"https://sanoma.example.com\").")


def desk_address(target: Any) -> str:
    """Where an announcement's link points: the target's own `desk=`, else the site's address."""
    return str(getattr(target, "desk", "") or getattr(settings, "SANOMA_SITE_URL", "") or "")


def announce_link_problems(resolved: Any, *, where: Any) -> list[CheckMessage]:
    """sanoma.E013 when the config announces approvals and nothing says the desk's address."""
    target = getattr(resolved, "announce_approvals", None)
    if target is None or desk_address(target):
        return []
    return [Error(f"announce_approvals posts each approval in {target.channel} with a link to the desk, and "
                  "the desk's address is unknown: neither slack_channel(desk=...) nor SANOMA_SITE_URL is set, so "
                  "the link could not be clicked", hint=HINT, obj=where, id="sanoma.E013")]


__all__ = ["HINT", "announce_link_problems", "desk_address"]
