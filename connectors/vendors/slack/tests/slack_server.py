"""Slack's Web API on a local port, answering as its documentation says.

- every method answers HTTP 200 with `{"ok": true, ...}` or `{"ok": false, "error": "<code>"}`:
  `not_authed` without a token, `invalid_auth` for one it does not know, `channel_not_found`,
  `is_archived`, `no_text`;
- `chat.postMessage` (JSON body) keeps the message with its `metadata` and answers `channel` (the
  ID) and `ts`; there is no idempotency key: each post is a message;
- `conversations.history` (newest first, `limit`, `cursor`, `include_all_metadata`) and
  `conversations.list` (`cursor` pagination) page through `response_metadata.next_cursor`;
- `rate_limit()` answers the next requests HTTP 429 with `Retry-After`, as Slack does.
"""
from __future__ import annotations

import threading
from typing import Any

from connectors.http.vendor_server import Answer, Received, VendorServer

TOKEN = "xoxb-test-0123456789"


def refused(code: str) -> Answer:
    return Answer(200, {"ok": False, "error": code})


class SlackServer(VendorServer):
    def __init__(self, *, channels: dict[str, str] | None = None, token: str = TOKEN, page_size: int = 2) -> None:
        super().__init__("slack")
        self.token = token
        self.page_size = page_size  # conversations.list's page, small so a name is found across pages
        named = channels or {"C0APPROVALS": "approvals", "C0NEWS": "news", "C0RANDOM": "random"}
        self.channels: dict[str, dict[str, Any]] = {cid: {"id": cid, "name": name, "is_archived": False,
                                                          "messages": []} for cid, name in named.items()}
        self._clock = 1_700_000_000
        self._state = threading.Lock()
        self.route("POST", "/chat.postMessage")(self._post)
        self.route("GET", "/conversations.history")(self._history)
        self.route("GET", "/conversations.list")(self._list)

    def messages(self, channel: str) -> list[dict[str, Any]]:
        return list(self.channels[channel]["messages"])

    def rate_limit(self, *, retry_after: int = 1, times: int = 1, path: str | None = None) -> None:
        self.fault(status=429, body={"ok": False, "error": "ratelimited"}, headers={"Retry-After": str(retry_after)},
                   times=times, path=path)

    def _auth(self, request: Received) -> Answer | None:
        header = request.header("authorization") or ""
        if not header.startswith("Bearer ") or not header[7:]:
            return refused("not_authed")
        if header[7:] != self.token:
            return refused("invalid_auth")
        return None

    def _channel(self, named: str) -> dict[str, Any] | None:
        if named in self.channels:
            return self.channels[named]
        return next((c for c in self.channels.values() if c["name"] == named.lstrip("#")), None)

    def _post(self, request: Received, params: dict[str, str]) -> Answer:
        denied = self._auth(request)
        if denied:
            return denied
        body = request.json() or {}
        channel = self._channel(str(body.get("channel") or ""))
        if channel is None:
            return refused("channel_not_found")
        if channel["is_archived"]:
            return refused("is_archived")
        if not body.get("text") and not body.get("blocks"):
            return refused("no_text")
        with self._state:
            self._clock += 1
            ts = f"{self._clock}.000200"
            message = {"type": "message", "user": "U0BOT", "text": body.get("text", ""), "ts": ts}
            if body.get("metadata"):
                message["metadata"] = body["metadata"]
            channel["messages"].insert(0, message)  # newest first, as history answers
        return Answer(200, {"ok": True, "channel": channel["id"], "ts": ts, "message": message})

    def _history(self, request: Received, params: dict[str, str]) -> Answer:
        denied = self._auth(request)
        if denied:
            return denied
        query = {k: v[-1] for k, v in request.query.items()}
        channel = self.channels.get(query.get("channel", ""))  # history takes an ID only
        if channel is None:
            return refused("channel_not_found")
        limit = min(int(query.get("limit") or 100), 999)
        start = int(query.get("cursor") or 0)
        with_meta = query.get("include_all_metadata") == "true"
        page = channel["messages"][start:start + limit]
        shown = [m if with_meta else {k: v for k, v in m.items() if k != "metadata"} for m in page]
        more = start + limit < len(channel["messages"])
        return Answer(200, {"ok": True, "messages": shown, "has_more": more,
                            "response_metadata": {"next_cursor": str(start + limit) if more else ""}})

    def _list(self, request: Received, params: dict[str, str]) -> Answer:
        denied = self._auth(request)
        if denied:
            return denied
        query = {k: v[-1] for k, v in request.query.items()}
        start = int(query.get("cursor") or 0)
        hide_archived = query.get("exclude_archived") == "true"
        listed = [c for c in self.channels.values() if not (c["is_archived"] and hide_archived)]
        page = listed[start:start + self.page_size]
        more = start + self.page_size < len(listed)
        return Answer(200, {"ok": True, "channels": [{"id": c["id"], "name": c["name"]} for c in page],
                            "response_metadata": {"next_cursor": str(start + self.page_size) if more else ""}})
