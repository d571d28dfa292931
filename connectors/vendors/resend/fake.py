"""Resend's fake: broadcasts kept as Resend keeps them, for scenarios, tests and the demo.

It behaves as Resend does on broadcasts: the idempotency key is not read (the connector says
`ignored`), a broadcast is sent once (a second send is refused `validation_error`, 422), a
broadcast that does not exist is `not_found` (404), and a bad segment is refused when creating.
"""
from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from connectors import CallContext, DriverError, define_fake
from connectors.vendors.resend.connector import resend
from connectors.vendors.resend.models import SENT_STATUSES, BroadcastDraft, BroadcastRef, BroadcastSend

SEGMENT = "seg_newsletter"  # the segment the example company's newsletter goes to


def _stamp() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _error(status: int, name: str, message: str) -> DriverError:
    return DriverError(f"resend answered {status}: {message}", status=status, vendor_code=name)


def _broadcast(state: dict, broadcast_id: str) -> dict:
    found = state["broadcasts"].get(broadcast_id)
    if found is None:
        raise _error(404, "not_found", "Broadcast not found")
    return found


def _create(state: dict, i: BroadcastDraft, c: CallContext) -> dict:
    if i.segment_id not in state["segments"]:
        raise _error(404, "not_found", "Segment not found")
    state["next"] = state.get("next", 0) + 1
    broadcast_id = f"bc_{state['next']}"
    state["broadcasts"][broadcast_id] = {
        "id": broadcast_id, "name": i.name, "segment_id": i.segment_id, "from": i.sender, "subject": i.subject,
        "html": i.html, "text": i.text, "status": "draft", "created_at": _stamp(), "scheduled_at": None,
        "sent_at": None,
    }
    return {"broadcast_id": broadcast_id}


def _send(state: dict, i: BroadcastSend, c: CallContext) -> dict:
    b = _broadcast(state, i.broadcast_id)
    if b["status"] != "draft":
        raise _error(422, "validation_error", f"Broadcast {i.broadcast_id} has already been sent")
    if i.scheduled_at:
        b["status"], b["scheduled_at"] = "scheduled", i.scheduled_at
    else:
        b["status"], b["sent_at"] = "sent", _stamp()
        state["delivered"].append({"broadcast_id": i.broadcast_id, "recipients": state["segments"][b["segment_id"]]})
    return {"broadcast_id": i.broadcast_id}


def _get(state: dict, i: BroadcastRef, c: CallContext) -> dict:
    b = _broadcast(state, i.broadcast_id)
    return {"broadcast_id": b["id"], "name": b["name"], "status": b["status"], "subject": b["subject"],
            "segment_id": b["segment_id"], "scheduled_at": b["scheduled_at"], "sent_at": b["sent_at"]}


def _find(state: dict, i: BroadcastSend, c: CallContext) -> dict:
    b = state["broadcasts"].get(i.broadcast_id)
    if b is None or b["status"] not in SENT_STATUSES:
        return {"happened": False}
    return {"happened": True, "output": {"broadcast_id": b["id"]}}


def initial_state() -> dict:
    return {"segments": {SEGMENT: 3}, "broadcasts": {}, "delivered": [], "next": 0}


def make_fake(file: Path | None = None):
    return define_fake(resend, initial=initial_state,
                       ops={"broadcast": {"create": _create, "send": _send, "find": _find, "get": _get}}, file=file)
