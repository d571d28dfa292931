"""What drift, plan and apply share: who runs them, following the run, printing a report."""
from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandParser

from changes.resources.outcome import OUTCOMES
from changes.services import held_text, refused_text, stuck_text
from runs.policies.versions import shown

DEFAULT_USER = "admin"


def add_common(parser: CommandParser) -> None:
    parser.add_argument("--as", dest="user", default=DEFAULT_USER,
                        help=f"the username the run is started as (the policy decides for them); "
                             f"default {DEFAULT_USER}")
    parser.add_argument("--here", action="store_true",
                        help="advance the run in this process (no worker needed) instead of waiting for a worker; "
                             "without it, a worker must be running (`manage.py worker`)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds to follow the run (default 600); what becomes of a run not ended by then "
                             "is said")


def value(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False)


def drift_lines(report: dict[str, Any]) -> list[str]:
    lines = []
    for entry in report["resources"]:
        where = f"{entry['file']}:{entry['line']}"
        head = f"{entry['status']:<8} {entry['type']}  {entry['name']}  ({where})"
        if entry["status"] == "drifted":
            lines.append(head)
            lines += [f"           {d['path']}: {value(d['actual'])} -> {value(d['desired'])} declared"
                      for d in entry["diffs"]]
        elif entry["status"] == "error":
            lines.append(f"{head}: {entry['error']['message']} [{entry['error']['code']}]")
        elif entry["status"] == "gone":
            lines.append(f"{head}: not at the vendor")
    counts = report["summary"]
    lines.append(", ".join(f"{counts[k]} {k}" for k in ("clean", "drifted", "gone", "error")))
    return lines


def verdict_text(verdict: dict[str, Any]) -> str:
    decision = verdict["decision"]
    if decision == "held":
        return held_text(verdict)
    if decision == "deny":
        return f"denied: {verdict.get('reason', '')}"
    if decision == "error":
        return f"cannot be decided: {verdict.get('reason', '')}"
    return "allowed"


def plan_lines(plan: dict[str, Any], *, by: str | None = None) -> list[str]:
    lines = [f"judged with policy {shown(plan.get('policy_version', ''))}"]
    for change in plan["changes"]:
        what = change["name"] or change["import_id"]
        where = (f"  ({change['file']}:{change['line']})" if change["file"]
                 else "  (no data file declares it: an apply created it)")
        lines.append(f"{change['action']:<8} {change['type']}  {what}{where}")
        for field in change["fields"]:
            lines.append(f"           {field['path']}: {value(field['actual'])} -> {value(field['desired'])}")
        for call in change["calls"]:
            lines.append(f"           {call['op']}: {verdict_text(call['verdict'])}")
    counts = plan["summary"]
    lines.append("no changes" if plan["empty"] else
                 ", ".join(f"{counts[k]} to {k}" for k in ("create", "update", "replace", "delete") if counts[k]))
    for approver, n in plan["holds"].items():
        lines.append(f"apply will wait for {approver} to approve {n} change{'s' if n != 1 else ''}")
    if plan.get("refused"):
        lines.append(refused_text(plan, to=by or "you"))
    if plan.get("stuck"):
        lines.append(stuck_text(plan))
    return lines


def outcome_line(found: dict[str, int]) -> str:
    """`10 applied, 2 denied, 0 rejected, 1 failed, 1 skipped`."""
    return ", ".join(f"{found[k]} {k}" for k in OUTCOMES)
