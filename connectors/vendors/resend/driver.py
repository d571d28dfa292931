"""Resend's real driver: its REST API over the shared `VendorHTTP`, Bearer auth.

Errors are read as Resend answers them, `{"statusCode": 422, "name": "validation_error",
"message": "..."}`: the `name` is the `DriverError`'s vendor code. A 429 carries `retry-after`
(and `ratelimit-reset`), which the engine honours; nothing here retries.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from connectors import CallContext, DriverError, define_driver
from connectors.http import VendorFault, VendorHTTP, join_url, parse_retry_after, require_secrets
from connectors.vendors.resend.connector import DEFAULT_API_URL, resend
from connectors.vendors.resend.models import (
    SENT_STATUSES,
    BroadcastDraft,
    BroadcastRef,
    BroadcastSend,
)

if TYPE_CHECKING:
    import httpx


def read_error(response: httpx.Response) -> VendorFault | None:
    body = response.json()
    return VendorFault(str(body.get("message") or ""), body.get("name"))


def read_wait(response: httpx.Response) -> float | None:
    """Resend's `retry-after`, else its `ratelimit-reset` (seconds until the window resets)."""
    wait = parse_retry_after(response.headers.get("retry-after"))
    if wait is None and response.status_code == 429:
        wait = parse_retry_after(response.headers.get("ratelimit-reset"))
    return wait


class ResendAPI:
    """One driver's requests to Resend (one connection pool)."""

    def __init__(self, transport: httpx.BaseTransport | None = None) -> None:
        self.http = VendorHTTP("resend", read_error=read_error, read_wait=read_wait, transport=transport)

    def call(self, method: str, path: str, context: CallContext, *, json: Any = None) -> dict[str, Any]:
        found = require_secrets("resend", context, "RESEND_API_KEY")
        base = context.secrets.get("RESEND_API_URL") or DEFAULT_API_URL
        answer = self.http.json(method, join_url(base, path), context=context, json=json,
                                headers={"Authorization": f"Bearer {found['RESEND_API_KEY']}"})
        if not isinstance(answer, dict):
            raise DriverError(f"resend answered {method} {path} with no object", retryable=False)
        return answer

    def create(self, i: BroadcastDraft, c: CallContext) -> dict[str, Any]:
        body: dict[str, Any] = {"segment_id": i.segment_id, "from": i.sender, "subject": i.subject}
        for key in ("name", "html", "text"):
            if getattr(i, key):
                body[key] = getattr(i, key)
        if i.reply_to:
            body["reply_to"] = list(i.reply_to)
        return {"broadcast_id": self.call("POST", "/broadcasts", c, json=body)["id"]}

    def send(self, i: BroadcastSend, c: CallContext) -> dict[str, Any]:
        body = {"scheduled_at": i.scheduled_at} if i.scheduled_at else {}
        return {"broadcast_id": self.call("POST", f"/broadcasts/{i.broadcast_id}/send", c, json=body)["id"]}

    def get(self, i: BroadcastRef, c: CallContext) -> dict[str, Any]:
        b = self.call("GET", f"/broadcasts/{i.broadcast_id}", c)
        return {"broadcast_id": b["id"], "name": b.get("name") or "", "status": b["status"],
                "subject": b.get("subject") or "", "segment_id": b.get("segment_id") or b.get("audience_id"),
                "scheduled_at": b.get("scheduled_at"), "sent_at": b.get("sent_at")}

    def find(self, i: BroadcastSend, c: CallContext) -> dict[str, Any]:
        """Whether the broadcast was sent: a broadcast past `draft` was (its send was accepted)."""
        try:
            state = self.get(BroadcastRef(broadcast_id=i.broadcast_id), c)
        except DriverError as err:
            if err.status == 404:
                return {"happened": False}
            raise
        if state["status"] in SENT_STATUSES:
            return {"happened": True, "output": {"broadcast_id": state["broadcast_id"]}}
        return {"happened": False}


def make_driver(transport: httpx.BaseTransport | None = None):
    api = ResendAPI(transport)
    return define_driver(resend, {"broadcast": {"create": api.create, "send": api.send, "find": api.find,
                                                "get": api.get}})
