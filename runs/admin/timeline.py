"""A run's ledger as the run page's timeline: in the order things happened, each line saying what
happened in words, with the time since the line before it."""
from __future__ import annotations

import json
from typing import Any

from django.utils.html import format_html

from connectors.errors import ErrorCode
from runs.admin.base import run_link
from runs.display import duration, moment
from runs.engine.calls import policy_words


def timeline_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ledger as a timeline: in the order things happened (by time, then by step), each with
    how long after the one before it came."""
    ordered = sorted(records, key=lambda r: (r.get("at") or 0, r.get("seq") or 0))
    rows, before = [], None
    for record in ordered:
        at = record.get("at")
        row = timeline_row(record)
        row["after"] = duration(at - before) if at is not None and before is not None else ""
        before = at if at is not None else before
        rows.append(row)
    return rows


def timeline_row(record: dict[str, Any]) -> dict[str, Any]:
    """A ledger record as one line of the run page's timeline."""
    kind = record.get("type", "")
    what: Any = ""
    if kind == "op.called":
        what = f"{record.get('op')} ({record.get('effect')})"
        if record.get("duration_ms") is not None:
            what += f", took {duration(record['duration_ms'])}"
    elif kind.startswith("approval."):
        parts = [record.get("approval", "")]
        for key in ("title", "approver", "by"):
            if record.get(key):
                parts.append(f"{key} {record[key]}")
        what = ", ".join(p for p in parts if p)
        if kind == "approval.withdrawn" and record.get("reason"):
            what += f": {record['reason']}"
    elif kind == "sleep.started":
        what = format_html("until {}", moment(record.get("until"), ago=False))
    elif kind == "op.attempt_failed":
        what = format_html("{} attempt {} failed; next try {}", record.get("op"), record.get("attempt"),
                           moment(record.get("next_at"), ago=False))
    elif kind == "message.received":
        what = f"on “{record.get('topic')}” from {record.get('by')}"
    elif kind == "run.continued":
        what = f"continued as new: generation {record.get('generation')}; the steps before are no longer replayed"
    elif kind in ("run.child_started", "run.child_ended"):
        what = format_html("{} {}", run_link(record.get("child", "")), record.get("workflow") or record.get("status"))
    elif kind == "run.cancelled":
        what = f"by {record.get('by') or record.get('actor')}"
        if record.get("reason"):
            what += f": {record['reason']}"
        if record.get("because"):
            what += f" ({record['because']})"
    decision = record.get("decision")
    if isinstance(decision, dict):
        decision_text = str(decision.get("kind", ""))
        if decision.get("approver"):
            decision_text += f" ({decision['approver']})"
        if decision.get("reason"):
            decision_text += f": {policy_words(str(record.get('op', '')), str(decision['reason']))}"
    else:
        decision_text = str(decision or "")
    error = record.get("error")
    error_text = ""
    if isinstance(error, dict):
        error_text = f"{error.get('code') or error.get('name', 'error')}: {error.get('message', '')}"
        if error.get("code") == ErrorCode.POLICY_DENIED and isinstance(decision, dict) and decision.get("reason"):
            error_text = str(error["code"])  # the reason is in the decision's column: said once
    group = record.get("group")
    return {
        "seq": record.get("seq"), "type": kind, "at": moment(record.get("at"), ago=False), "what": what,
        "decision": decision_text, "error": error_text,
        "group": f"ctx.all member {group['index'] + 1} of {group['size']}" if isinstance(group, dict) else "",
        "body": json.dumps(record, indent=2, sort_keys=True, default=str),
    }
