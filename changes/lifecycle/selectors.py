"""Reading changes: the list and one change, each only where the viewer may see its run."""
from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from changes.lifecycle import in_flight
from changes.lifecycle.models import ChangeRun
from changes.lifecycle.workflow import NAME
from changes.selectors import declared_resources
from connectors.errors import SanomaError
from runs.approvals.permissions import Principal, principal_of, visible_runs
from runs.errors import RunCode
from runs.models import Approval, ApprovalStatus, Run
from runs.selectors import visible_run


def visible_changes(viewer: str | Principal) -> QuerySet[ChangeRun]:
    """The changes whose runs `viewer` may see, newest first."""
    runs = visible_runs(principal_of(viewer)).filter(workflow=NAME).values("id")
    return ChangeRun.objects.filter(run_id__in=runs).order_by("-opened_at", "-run_id")


def changes_for(viewer: str | Principal, *, limit: int = 50) -> list[tuple[ChangeRun, Run]]:
    """The newest changes whose runs `viewer` may see, with their runs."""
    rows = list(visible_changes(viewer)[:limit])
    runs = Run.objects.in_bulk([row.run_id for row in rows])
    return [(row, runs[row.run_id]) for row in rows if row.run_id in runs]


def all_changes(*, limit: int = 50) -> list[tuple[ChangeRun, Run]]:
    """The newest changes, every one (the console, which is trusted as its shell is)."""
    rows = list(ChangeRun.objects.order_by("-opened_at")[:limit])
    runs = Run.objects.in_bulk([row.run_id for row in rows])
    return [(row, runs[row.run_id]) for row in rows if row.run_id in runs]


def change_of_any(run_id: str) -> tuple[ChangeRun, Run]:
    return change_of(run_id, None)


def change_of(run_id: str, viewer: str | Principal | None) -> tuple[ChangeRun, Run]:
    """One change; `run_not_found` when there is none or the viewer may not see its run (None:
    the runtime, or the console, which sees every run)."""
    run = visible_run(run_id=run_id, viewer=viewer)
    row = ChangeRun.objects.filter(run_id=run.id).first()
    if row is None:
        raise SanomaError(f"No change {run_id}, or you may not see it", code=RunCode.RUN_NOT_FOUND,
                          data={"run_id": run_id})
    return row, run


def picture(row: ChangeRun, run: Run) -> dict[str, Any]:
    """A change as the surfaces show it: what it is, how far it got, its checks and plan, what it
    does to the work in flight, what waits (the merge's approval), what was merged and deployed,
    and how the run ended."""
    pending = list(Approval.objects.filter(run_id=run.id, status=ApprovalStatus.PENDING)
                   .values("id", "title", "approver", "op"))
    return {
        "run": run.id, "status": run.status, "waiting_for": run.waiting_for, "state": row.state,
        "branch": row.branch, "base": row.base, "title": row.title, "description": row.description,
        "pull_request": row.pull_request or None, "repository": row.repo_url, "opened_by": row.opened_by,
        "opened_at": row.opened_at.isoformat(), "head": row.head_sha or None,
        "checks": {k: v for k, v in row.checks.items() if k not in ("diff", "in_flight")} if row.checks else None,
        "diff": (row.checks or {}).get("diff") or None, "plan": row.plan or None,
        "in_flight": (row.checks or {}).get("in_flight") or None, "approvals": pending,
        "merged": row.merged_sha or None,
        "deployed": ({"revision": row.deployed_revision, "version": row.deployed_version}
                     if row.deployed_revision else None),
        "version": run.app_version, "result": run.result, "error": run.error,
    }


_MISSING = object()


def _at(values: Any, path: str) -> Any:
    """The value at a diff's dotted path (`price.amount`, `tags.0`) in declared values, or _MISSING."""
    for part in path.split("."):
        if isinstance(values, dict) and part in values:
            values = values[part]
        elif isinstance(values, list) and part.isdigit() and int(part) < len(values):
            values = values[int(part)]
        else:
            return _MISSING
    return values


def declared_here() -> dict[str, Any]:
    """What this site's own data files declare now (resource id -> values): the values the base
    holds as deployed. Empty when they cannot be read (no root, a config that does not resolve)."""
    try:
        return {r["id"]: r["values"] for r in declared_resources().plain()["resources"]}
    except Exception:
        return {}


def drifted_fields(plan: dict[str, Any] | None, declared: dict[str, Any]) -> dict[tuple[str, str], Any]:
    """The plan's fields whose `actual` (the vendor's value now) differs from what this site's data
    files declare, which is what a diff of the data files shows as the old value: (resource id,
    path) -> that declared value. The vendor has drifted from the site there."""
    found: dict[tuple[str, str], Any] = {}
    for change in (plan or {}).get("changes", []):
        values = declared.get(change.get("resource") or "")
        if values is None:
            continue
        for field in change.get("fields") or []:
            here = _at(values, str(field.get("path", "")))
            if here is not _MISSING and here != field.get("actual") and here != field.get("desired"):
                found[(change["resource"], field["path"])] = here
    return found


def applied_text(p: dict[str, Any]) -> str:
    """What the change's apply made at the vendors once merged and deployed, from its run's result
    (`2 of 3 planned changes made; 1 failed`); "" until it has applied."""
    applied = (p.get("result") or {}).get("applied") if isinstance(p.get("result"), dict) else None
    if not isinstance(applied, dict):
        return ""
    planned = sum(v for k, v in applied.items() if k.startswith("planned_") and isinstance(v, int))
    if not planned:
        return "nothing to change at the vendors"
    kinds = ", ".join(f"{applied[k]} {k[len('planned_'):]}" for k in sorted(applied)
                      if k.startswith("planned_") and applied[k])
    missed = ", ".join(f"{applied[k]} {k}" for k in ("failed", "skipped") if applied.get(k))
    return (f"{applied.get('done', 0)} of {planned} planned change{'s' if planned != 1 else ''} made ({kinds})"
            + (f"; not made: {missed}" if missed else ""))


def describe(p: dict[str, Any]) -> list[str]:
    """A change's picture as lines of text (`manage.py change show`)."""
    lines = [f"{p['run']}: {p['title']}", f"  {p['branch']} -> {p['base']} at {p['repository']}, opened by "
             f"{p['opened_by']} at {p['opened_at']}", f"  state: {p['state']} (run {p['status']}"
             + (f", waiting for {p['waiting_for']})" if p["waiting_for"] else ")")]
    if p["head"]:
        lines.append(f"  head: {p['head']}")
    checks = p["checks"] or {}
    for check in checks.get("checks", []):
        mark = "ok" if check.get("ok") else ("skipped" if check.get("skipped") else "FAILED")
        lines.append(f"  check {check['name']}: {mark} {check.get('summary') or check.get('skipped') or ''}".rstrip())
        for problem in check.get("problems", [])[:20]:
            where = f"{problem['file']}:{problem['line']}: " if problem.get("file") else ""
            lines.append(f"    {where}{problem['message']}")
    diff = p.get("diff") or {}
    if diff.get("problem"):
        lines.append(f"  diff: {diff['problem']}")
    elif diff:
        lines.append(f"  diff against {diff.get('base')}: {diff.get('files_count', 0)} file(s), "
                     f"+{diff.get('added', 0)} -{diff.get('removed', 0)}")
        for f in diff.get("files", [])[:50]:
            lines.append(f"    {f['status']:<8} {f['path']} (+{f.get('added') or 0} -{f.get('removed') or 0})")
    plan = p["plan"] or {}
    for change in plan.get("changes", []):
        verdicts = ", ".join(f"{c['op']} {c.get('verdict', {}).get('decision', '?')}" for c in change.get("calls", []))
        lines.append(f"  plan: {change.get('action')} {change.get('resource') or change.get('type')}: {verdicts}")
    if plan and plan.get("empty"):
        lines.append("  plan: nothing to change at the vendors")
    flight = p.get("in_flight")
    if flight:
        lines.append(f"  work in flight: {flight.get('said') or in_flight.said(flight)}")
        for row in in_flight.table(flight):
            of = f" ({row['workflow']})" if row["workflow"] else ""
            lines.append(f"    {row['outcome']:<10} {row['run']}{of}: {row['what']}")
        if flight.get("truncated"):
            lines.append(f"    (each kind cut at {in_flight.LISTED} rows; the counts are whole)")
    for approval in p["approvals"]:
        lines.append(f"  waiting for {approval['approver']} to approve {approval['title']!r} ({approval['op']})")
    if p["merged"]:
        lines.append(f"  merged: {p['merged']}")
    if p["deployed"]:
        lines.append(f"  deployed: {p['deployed']['revision']} on {p['deployed']['version']}")
    if p["error"]:
        lines.append(f"  ended with {p['error'].get('code')}: {p['error'].get('message')}")
    return lines


__all__ = ["visible_changes", "all_changes", "applied_text", "change_of", "change_of_any", "changes_for",
           "declared_here", "describe", "drifted_fields", "picture"]
