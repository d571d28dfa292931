"""Checking what a run did against what a scenario expects, from the run's ledger records. Pure.

A call counts only when its `op.called` record has no error: a denied, held-then-rejected or
failed call was attempted, not made. A call expectation looks at the calls of the run and of the
runs it started (`ctx.start_run`, and theirs), which the scenario drives with it; a failure names
the child run that made each call. So `was not called` passes for a call the policy denied, and
a failed `was called` lists the calls that were made and the attempts that failed.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from features.library import model as m
from features.library.values import contains, short


@dataclass(frozen=True)
class Check:
    step: str
    ok: bool
    detail: str = ""


def _error_text(error: Any) -> str:
    if not isinstance(error, dict):
        return str(error)
    code = error.get("code")
    message = error.get("message", "")
    return f"{code}: {message}" if code else f"{error.get('name', 'Error')}: {message}"


def end_of(records: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    return next((r for r in records if r.get("type") in ("run.finished", "run.failed", "run.cancelled")), None)


def _by(record: dict[str, Any], root: str | None) -> str:
    """Which run made a call, when it was not the scenario's run itself."""
    run_id = record.get("run_id")
    return f" (by the child run {run_id})" if root is not None and run_id and run_id != root else ""


def describe_calls(records: Sequence[dict[str, Any]], root: str | None = None) -> str:
    """Every operation call of the run (and of the runs it started, when `root` names the run), in
    order, with its outcome: for a failure message."""
    calls = [r for r in records if r.get("type") == "op.called"]
    children = sorted({str(r.get("run_id")) for r in records if root is not None and r.get("run_id") != root})
    if not calls:
        return "The run made no operation calls" + (f", nor did the runs it started ({', '.join(children)})."
                                                   if children else ".")
    lines = ["The run's calls" + (f" and those of the runs it started ({', '.join(children)}):" if children else ":")]
    for record in calls:
        outcome = f"failed, {_error_text(record['error'])}" if "error" in record else "made"
        decision = record.get("decision") or {}
        if decision.get("kind") == "deny":
            outcome = f"denied by policy, {_error_text(record.get('error', {}))}"
        attempts = f" after {record['attempt']} attempts" if (record.get("attempt") or 1) > 1 else ""
        lines.append(f"  {record.get('op')} {short(record.get('input'))}: {outcome}{attempts}{_by(record, root)}")
    return "\n".join(lines)


def describe_end(records: Sequence[dict[str, Any]]) -> str:
    end = end_of(records)
    if end is None:
        return "The run has not ended."
    if end["type"] == "run.finished":
        return f"The run finished with {short(end.get('output'))}."
    if end["type"] == "run.failed":
        return f"The run failed with {_error_text(end.get('error', {}))}."
    return "The run was cancelled."


def check_call(expectation: m.ExpectCall, records: Sequence[dict[str, Any]], step: str = "",
               root: str | None = None) -> Check:
    """The call made, or not, by the run; given `root` (the run's id), `records` may hold the records
    of the runs it started too, and a call made by one of them counts (each is named in a failure)."""
    attempts = [r for r in records if r.get("type") == "op.called" and r.get("op") == expectation.op]
    made = [r for r in attempts if "error" not in r]
    found = any(expectation.input is None or contains(r.get("input"), expectation.input) for r in made)
    if found == expectation.called:
        return Check(step, True)
    what = expectation.op if expectation.input is None else f"{expectation.op} with {short(expectation.input)}"
    if expectation.called:
        lines = [f"no call to {what} was made."]
        if made:
            lines.append(f"Calls to {expectation.op} that were made:")
            lines += [f"  {short(r.get('input'))}{_by(r, root)}" for r in made]
        failed = [r for r in attempts if "error" in r]
        if failed:
            lines.append(f"Attempts at {expectation.op} that failed:")
            lines += [f"  {short(r.get('input'))}: {_error_text(r['error'])}{_by(r, root)}" for r in failed]
        if not attempts:
            lines.append(f"The run never attempted {expectation.op}.")
    else:
        lines = [f"{expectation.op} was called:"] + [f"  {short(r.get('input'))}{_by(r, root)}" for r in made]
    own = [r for r in records if root is None or r.get("run_id") == root]
    lines += [describe_calls(records, root), describe_end(own)]
    return Check(step, False, "\n".join(lines))


def check_outcome(expectation: m.ExpectOutcome, records: Sequence[dict[str, Any]], step: str = "") -> Check:
    end = end_of(records)
    if end is None:
        return Check(step, False, "the run has not ended (run not ended).\n" + describe_calls(records))
    if expectation.outcome == "finished":
        if end["type"] == "run.finished":
            return Check(step, True)
        return Check(step, False, f"{describe_end(records)}\n{describe_calls(records)}")
    if end["type"] != "run.failed":
        return Check(step, False, f"{describe_end(records)}\n{describe_calls(records)}")
    code = (end.get("error") or {}).get("code")
    if expectation.code is None or code == expectation.code:
        return Check(step, True)
    return Check(step, False, f'the run failed with {code or "no code"}, not {expectation.code}: '
                              f"{(end.get('error') or {}).get('message', '')}\n{describe_calls(records)}")


def check(scenario: m.Scenario, records: Sequence[dict[str, Any]]) -> list[Check]:
    """Each of the scenario's call and outcome expectations against a run's ledger records."""
    out = []
    for step in scenario.steps:
        if isinstance(step.action, m.ExpectCall):
            out.append(check_call(step.action, records, step.text))
        elif isinstance(step.action, m.ExpectOutcome):
            out.append(check_outcome(step.action, records, step.text))
    return out


def check_ledger(expectation: m.ExpectLedger, records: Sequence[dict[str, Any]], step: str = "") -> Check:
    of_type = [r for r in records if r.get("type") == expectation.type]
    matching = [r for r in of_type if expectation.body is None or contains(r, expectation.body)]
    if expectation.absent:
        ok = not matching
    elif expectation.count is not None:
        ok = len(matching) == expectation.count
    else:
        ok = bool(matching)
    if ok:
        return Check(step, True)
    if expectation.absent:
        wanted = "none"
    else:
        wanted = f"{expectation.count}" if expectation.count is not None else "at least one"
    body = f" with {short(expectation.body)}" if expectation.body is not None else ""
    lines = [f'expected {wanted} "{expectation.type}" record(s){body}; found {len(matching)}.']
    if expectation.body is not None and of_type:
        lines.append(f'The "{expectation.type}" records:')
        lines += [f"  {short(_body(r))}" for r in of_type]
    lines.append("The ledger: " + ", ".join(str(r.get("type")) for r in records))
    return Check(step, False, "\n".join(lines))


def check_order(expectation: m.ExpectLedgerOrder, records: Sequence[dict[str, Any]], step: str = "") -> Check:
    types = [str(r.get("type")) for r in records]
    position = 0
    for wanted in expectation.types:
        try:
            position = types.index(wanted, position) + 1
        except ValueError:
            return Check(step, False, f'"{wanted}" does not follow in the ledger (in order: '
                                      f'{", ".join(expectation.types)}).\nThe ledger: {", ".join(types)}')
    return Check(step, True)


def _body(record: dict[str, Any]) -> dict[str, Any]:
    skip = {"v", "app", "id", "run_id", "at", "actor", "workflow", "type"}
    return {k: v for k, v in record.items() if k not in skip}


def failed(checks: Iterable[Check]) -> list[Check]:
    return [c for c in checks if not c.ok]
