"""Slack's real driver: its Web API over the shared `VendorHTTP`, with the bot token as Bearer.

Slack answers most failures with HTTP 200 and `{"ok": false, "error": "channel_not_found"}`: each
is a final `DriverError` whose vendor code is Slack's `error` (those Slack says are on its side,
`internal_error`, `fatal_error`, `service_unavailable`, `request_timeout`, are retryable). A rate
limit is HTTP 429 with `Retry-After`, which the engine honours. Nothing here retries.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from connectors import CallContext, DriverError, define_driver
from connectors.http import VendorFault, VendorHTTP, join_url, require_secrets
from connectors.vendors.slack.connector import DEFAULT_API_URL, slack
from connectors.vendors.slack.models import MARKER_EVENT, SlackMessage

if TYPE_CHECKING:
    import httpx

# Slack's errors that say the trouble is on its side: the same request may succeed later.
SLACK_SIDE = frozenset({"internal_error", "fatal_error", "service_unavailable", "request_timeout", "ratelimited"})
HISTORY_PAGES = 5  # a reconcile read looks this many pages (of HISTORY_LIMIT) back in the channel
HISTORY_LIMIT = 200
CHANNEL_PAGES = 20


def read_error(response: httpx.Response) -> VendorFault | None:
    body = response.json()
    return VendorFault(str(body.get("error") or ""), body.get("error"))


class SlackAPI:
    """One driver's requests to Slack's Web API (one connection pool)."""

    def __init__(self, transport: httpx.BaseTransport | None = None) -> None:
        self.http = VendorHTTP("slack", read_error=read_error, transport=transport)

    def call(self, method: str, name: str, context: CallContext, *, json: Any = None,
             params: dict[str, Any] | None = None) -> dict[str, Any]:
        found = require_secrets("slack", context, "SLACK_BOT_TOKEN")
        base = context.secrets.get("SLACK_API_URL") or DEFAULT_API_URL
        headers = {"Authorization": f"Bearer {found['SLACK_BOT_TOKEN']}"}
        if json is not None:
            headers["Content-Type"] = "application/json; charset=utf-8"
        answer = self.http.json(method, join_url(base, name), context=context, json=json, params=params,
                                headers=headers)
        if not isinstance(answer, dict):
            raise DriverError(f"slack answered {name} with no object", retryable=False)
        if not answer.get("ok"):
            code = str(answer.get("error") or "unknown_error")
            raise DriverError(f"slack refused {name}: {code}", vendor_code=code, retryable=code in SLACK_SIDE)
        return answer

    def post(self, i: SlackMessage, c: CallContext) -> dict[str, Any]:
        body: dict[str, Any] = {"channel": i.channel, "text": i.text,
                                "metadata": {"event_type": MARKER_EVENT, "event_payload": {"key": c.idempotency_key}}}
        if i.thread_ts:
            body["thread_ts"] = i.thread_ts
        answer = self.call("POST", "chat.postMessage", c, json=body)
        return {"channel": answer["channel"], "ts": answer["ts"]}

    def channel_id(self, channel: str, c: CallContext) -> str:
        """A channel's ID: given as one, or found by its name in `conversations.list`, page by page."""
        name = channel.lstrip("#")
        if not channel.startswith("#") and name[:1] in ("C", "G", "D") and name.upper() == name:
            return name
        cursor = ""
        for _ in range(CHANNEL_PAGES):
            params = {"types": "public_channel,private_channel", "exclude_archived": "true", "limit": 200}
            if cursor:
                params["cursor"] = cursor
            page = self.call("GET", "conversations.list", c, params=params)
            for found in page.get("channels") or []:
                if found.get("name") == name:
                    return str(found["id"])
            cursor = (page.get("response_metadata") or {}).get("next_cursor") or ""
            if not cursor:
                break
        raise DriverError(f"slack has no channel {channel} the bot can see", vendor_code="channel_not_found",
                          retryable=False)

    def find(self, i: SlackMessage, c: CallContext) -> dict[str, Any]:
        """Whether the call's message is in the channel: its key in a recent message's metadata."""
        channel = self.channel_id(i.channel, c)
        cursor = ""
        for _ in range(HISTORY_PAGES):
            params: dict[str, Any] = {"channel": channel, "limit": HISTORY_LIMIT, "include_all_metadata": "true"}
            if cursor:
                params["cursor"] = cursor
            page = self.call("GET", "conversations.history", c, params=params)
            for message in page.get("messages") or []:
                meta = message.get("metadata") or {}
                if (meta.get("event_type") == MARKER_EVENT
                        and (meta.get("event_payload") or {}).get("key") == c.idempotency_key):
                    return {"happened": True, "output": {"channel": channel, "ts": message["ts"]}}
            cursor = (page.get("response_metadata") or {}).get("next_cursor") or ""
            if not page.get("has_more") or not cursor:
                break
        return {"happened": False}


def make_driver(transport: httpx.BaseTransport | None = None):
    api = SlackAPI(transport)
    return define_driver(slack, {"message": {"post": api.post, "find": api.find}})
