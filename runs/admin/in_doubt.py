"""What the in-doubt settle form shows and reads: what was sent, and an error's issues by field."""
from __future__ import annotations

from typing import Any

from django.utils.html import format_html

from connectors.errors import SanomaError
from runs.admin.common import pretty_json
from runs.config.registry import get_config
from runs.display import moment
from runs.models import Run


def in_doubt_sent(run: Run, intent: Any) -> dict[str, Any]:
    """What was sent in the call in doubt, and whether its vendor was asked (its reconcile read)."""
    body = intent.body
    op = get_config().ops.get(body.get("op", ""))
    reconcile = getattr(op, "reconcile", None)
    if op is None:
        asked = "Its operation is not in the current code."
    elif not reconcile:
        asked = f"Not asked: {op.id} declares no reconcile read, so only you can say what happened."
    elif run.wake_at is not None:
        asked = format_html("Not asked yet: its reconcile read {} is asked once the call can no longer land, at {}.",
                            reconcile, moment(run.wake_at))
    else:
        asked = format_html("Asked through its reconcile read {}, which could not say (the workers' log has why).",
                            reconcile)
    return {"input": pretty_json(body["input"]) if "input" in body else "not recorded",
            "idempotency_key": body.get("idempotency_key") or "", "at": moment(intent.at), "asked": asked}


def field_issues(err: SanomaError, *, rename: dict[str, str] | None = None) -> dict[str, str]:
    """An error's issues by the form field they name (the first part of each issue's path)."""
    issues = err.data.get("issues") if isinstance(err.data, dict) else None
    found: dict[str, str] = {}
    for item in issues or []:
        path = item.get("path") or []
        if path:
            name = str(path[0])
            found.setdefault((rename or {}).get(name, name), str(item.get("message", "")))
    return found
