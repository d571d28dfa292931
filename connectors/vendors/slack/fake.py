"""Slack's fake: channels and their messages, for scenarios, tests and the demo.

It behaves as Slack does: no idempotency key (a post sent twice is two messages), a channel
named by ID or `#name`, `channel_not_found` for one it does not have, `is_archived` for an
archived one, and each message keeps the call's key in its metadata as the real driver sends it,
so `slack.message.find` settles a post in doubt the same way.
"""
from __future__ import annotations

from pathlib import Path

from connectors import CallContext, DriverError, define_fake
from connectors.vendors.slack.connector import slack
from connectors.vendors.slack.models import MARKER_EVENT, SlackMessage


def _refused(code: str) -> DriverError:
    return DriverError(f"slack refused chat.postMessage: {code}", vendor_code=code, retryable=False)


def channel_of(state: dict, channel: str) -> str | None:
    """The ID of a channel named by ID or `#name`, or None."""
    if channel in state["channels"]:
        return channel
    name = channel.lstrip("#")
    return next((cid for cid, c in state["channels"].items() if c["name"] == name), None)


def _post(state: dict, i: SlackMessage, c: CallContext) -> dict:
    cid = channel_of(state, i.channel)
    if cid is None:
        raise _refused("channel_not_found")
    channel = state["channels"][cid]
    if channel.get("archived"):
        raise _refused("is_archived")
    state["clock"] = state.get("clock", 1_700_000_000) + 1
    ts = f"{state['clock']}.000100"
    channel["messages"].append({"ts": ts, "text": i.text, "thread_ts": i.thread_ts,
                                "metadata": {"event_type": MARKER_EVENT, "event_payload": {"key": c.idempotency_key}}})
    return {"channel": cid, "ts": ts}


def _find(state: dict, i: SlackMessage, c: CallContext) -> dict:
    cid = channel_of(state, i.channel)
    if cid is None:
        raise _refused("channel_not_found")
    for message in state["channels"][cid]["messages"]:
        if message["metadata"]["event_payload"]["key"] == c.idempotency_key:
            return {"happened": True, "output": {"channel": cid, "ts": message["ts"]}}
    return {"happened": False}


def initial_state() -> dict:
    return {"channels": {
        "C0APPROVALS": {"name": "approvals", "messages": []},
        "C0NEWS": {"name": "news", "messages": []},
        "C0OLD": {"name": "old-news", "archived": True, "messages": []},
    }}


def make_fake(file: Path | None = None):
    return define_fake(slack, initial=initial_state, ops={"message": {"post": _post, "find": _find}}, file=file)
