"""How an apply ended, in numbers: how many changes were made, and why each of the others was not.

An apply that did not make every change of its plan did not do what it was for, so it must not read
as a success: its run fails with `apply_incomplete`, the counts in the error's data (and the whole
report, which a failed run has no output to keep it in). A change is counted once, by what stopped
it:

- `applied`: made;
- `denied`: the policy denied one of its calls (`policy_denied`);
- `rejected`: it was held for an approver who rejected it (or the approval was withdrawn);
- `failed`: the vendor, a missing secret, anything else;
- `skipped`: it refers to a change that did not happen.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from changes.errors import StateCode
from connectors.errors import ErrorCode, SanomaError
from runs.errors import RunCode

OUTCOMES = ("applied", "denied", "rejected", "failed", "skipped")
_REJECTED = (RunCode.APPROVAL_REJECTED, RunCode.APPROVAL_WITHDRAWN)


def outcome_of(change: Mapping[str, Any]) -> str:
    """One applied change's outcome (its `status` and, when it failed, its error's code)."""
    status = change.get("status")
    if status == "done":
        return "applied"
    if status == "skipped":
        return "skipped"
    code = (change.get("error") or {}).get("code")
    if code == ErrorCode.POLICY_DENIED:
        return "denied"
    if code in _REJECTED:
        return "rejected"
    return "failed"


def counts(changes: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """`{applied, denied, rejected, failed, skipped}` over an apply's changes."""
    found = dict.fromkeys(OUTCOMES, 0)
    for change in changes:
        found[outcome_of(change)] += 1
    return found


def said(found: Mapping[str, int]) -> str:
    """`2 denied, 1 skipped`: the outcomes other than applied that happened."""
    return ", ".join(f"{found[k]} {k}" for k in OUTCOMES[1:] if found.get(k))


def incomplete(report: dict[str, Any]) -> SanomaError | None:
    """The error an apply's run fails with when a change of its plan was not made (None: all were)."""
    changes = report.get("changes", [])
    found = counts(changes)
    missed = len(changes) - found["applied"]
    if not missed:
        return None
    return SanomaError(
        f"{missed} of {len(changes)} change{'s' if len(changes) != 1 else ''} not made ({said(found)}); "
        f"{found['applied']} applied",
        code=StateCode.APPLY_INCOMPLETE, data={**found, "planned": len(changes), "report": report})


def report_of_failed(error: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The report an incomplete apply's run keeps in its error (None: the run failed otherwise)."""
    if not error or error.get("code") != StateCode.APPLY_INCOMPLETE:
        return None
    report = (error.get("data") or {}).get("report")
    return report if isinstance(report, dict) else None


__all__ = ["OUTCOMES", "counts", "incomplete", "outcome_of", "report_of_failed", "said"]
