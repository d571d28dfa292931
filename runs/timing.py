"""A run's steps in time, read from its ledger only: each call, wait, message and child run with
when it began and ended, what went in and came out, the policy's verdict and who approved.

The run page's waterfall draws these, and comparing two runs aligns them. Nothing here reads the
database: callers pass the records they read (one read, in the page's snapshot).

When a step began is not always recorded, so it is derived:
- a call began `duration_ms` before its `op.called` record (or at its first failed attempt);
- a held call's approval, a `ctx.approval`, a sleep and a child run begin at their first record;
- a message was waited for from the run's record before it (the run waits from its last step on);
- a message still waited for has no record yet: the caller passes it (`OpenWait`, from the wait's
  own step), and it is a step not over, like an approval not yet decided.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ENDINGS = {"run.finished": "finished", "run.failed": "failed", "run.cancelled": "cancelled"}


@dataclass
class StepTime:
    """One step of a run: a call, or something it waited for."""

    kind: str  # call, approval, sleep, message, child, doubt, tag
    name: str  # the operation, the approval's title, the topic, the child's workflow
    seq: int
    start_ms: int
    end_ms: int | None  # None: not over yet
    outcome: str  # ok, failed, denied, waiting, approved, rejected, withdrawn, slept, sleeping, received, ...
    effect: str = ""
    input: Any = None
    output: Any = None
    error: dict[str, Any] | None = None
    verdict: str = ""  # the policy's decision on a call: allow, deny, approve
    approvers: list[str] = field(default_factory=list)  # "asked of bob", "approved by bob"
    attempts: int = 1
    group: str = ""  # "ctx.all member 2 of 3"
    held: bool = False  # a call the policy held for an approval (drawn beside its approval)

    @property
    def duration_ms(self) -> int | None:
        return None if self.end_ms is None else max(0, self.end_ms - self.start_ms)

    @property
    def instant(self) -> bool:
        return self.kind in ("tag", "doubt")


@dataclass(frozen=True)
class OpenWait:
    """A wait for a message not over yet: its topic, the wait's seq and when it began. The ledger
    records a message wait only once the message is read, so the caller reads this from the
    wait's own step."""

    topic: str
    seq: int
    since_ms: int


@dataclass
class RunTime:
    start_ms: int | None
    end_ms: int | None  # None while the run goes on
    outcome: str  # finished, failed, cancelled, or "" while it goes on
    steps: list[StepTime]


def _error(record: dict[str, Any]) -> dict[str, Any] | None:
    error = record.get("error")
    return error if isinstance(error, dict) and error else None


def _group(record: dict[str, Any]) -> str:
    group = record.get("group")
    return f"ctx.all member {group['index'] + 1} of {group['size']}" if isinstance(group, dict) else ""


RUNTIME = "sanoma:runtime"  # runs.engine.transitions.RUNTIME_ACTOR: who withdraws what a run left pending


def ended_said(outcome: str, record: dict[str, Any], records: list[dict[str, Any]]) -> str:
    """Who ended an approval, in the words its own page uses (runs.approvals.selectors.decided_said):
    `approved by bob`; for one the runtime withdrew as its run ended, why and by whom:
    `withdrawn: its run was cancelled by ops ("wrong order")`."""
    by = record.get("by") or record.get("actor")
    if outcome != "withdrawn" or by != RUNTIME:
        return f"{outcome} by {by}"
    said = f"withdrawn: {record.get('reason') or 'its run ended'}"
    cancelled = next((r for r in reversed(records) if r.get("type") == "run.cancelled"), None)
    if cancelled is not None:
        said += f" by {cancelled.get('by') or cancelled.get('actor')}"
        if cancelled.get("reason"):
            said += f" (“{cancelled['reason']}”)"
    return said


def run_time(records: list[dict[str, Any]], *, waiting: OpenWait | None = None) -> RunTime:
    """The run's steps, in the order they began, from its ledger records; with `waiting`, the
    message the run waits for now as a step not over (drawn open, to the moment of the read)."""
    ordered = sorted(records, key=lambda r: (r.get("at") or 0, r.get("seq") or 0))
    steps: list[StepTime] = []
    approvals: dict[str, StepTime] = {}
    children: dict[str, StepTime] = {}
    first_attempt: dict[int, int] = {}  # a call's seq -> when its first failed attempt was recorded
    start_ms: int | None = None
    end_ms: int | None = None
    outcome = ""
    before: int | None = None  # when the record before this one was written
    for record in ordered:
        kind, at, seq = record.get("type", ""), int(record.get("at") or 0), int(record.get("seq") or 0)
        if kind == "run.started":
            start_ms = at if start_ms is None else min(start_ms, at)
        elif kind in ENDINGS:
            end_ms, outcome = at, ENDINGS[kind]
        elif kind == "op.attempt_failed":
            first_attempt.setdefault(seq, at)
        elif kind == "op.called":
            steps.append(_call(record, at, first_attempt.get(seq), approvals))
        elif kind == "approval.requested":
            held = record.get("requested_by") == "policy"
            step = StepTime("approval", str(record.get("title", "")), seq, at, None, "waiting",
                            approvers=[f"asked of {record.get('approver')}"], group=_group(record),
                            input={"op": record["op"]} if held and record.get("op") else None)
            approvals[str(record.get("approval", ""))] = step
            steps.append(step)
        elif kind in ("approval.decided", "approval.withdrawn"):
            asked = approvals.get(str(record.get("approval", "")))
            if asked is not None:
                decided = record.get("decision") or "withdrawn"
                asked.outcome = {"approve": "approved", "reject": "rejected"}.get(decided, decided)
                asked.end_ms = at
                asked.approvers.append(ended_said(asked.outcome, record, ordered))
                if record.get("note") or record.get("reason"):
                    asked.output = {"note": record.get("note") or record.get("reason")}
        elif kind == "sleep.started":
            until = record.get("until")
            steps.append(StepTime("sleep", "sleep", seq, at, int(until) if until is not None else at, "sleeping",
                                  input={"until": until}, group=_group(record)))
        elif kind == "message.received":
            steps.append(StepTime("message", str(record.get("topic", "")), seq, before if before is not None else at,
                                  at, "received", output=record.get("payload"),
                                  approvers=[f"sent by {record.get('by')}"] if record.get("by") else [],
                                  group=_group(record)))
        elif kind == "run.child_started":
            error = _error(record)
            step = StepTime("child", str(record.get("workflow", "")), seq, at, at if error else None,
                            "failed" if error else "running", input=record.get("input"), error=error,
                            output={"run_id": record.get("child")} if not error else None,
                            verdict=_verdict(record.get("decision")), group=_group(record))
            children[str(record.get("child", ""))] = step
            steps.append(step)
        elif kind == "run.child_ended":
            child = children.get(str(record.get("child", "")))
            if child is None:
                child = StepTime("child", "child run", seq, at, at, "")
                steps.append(child)
            child.end_ms, child.outcome = at, str(record.get("status", ""))
            child.output, child.error = record.get("output"), _error(record)
        elif kind == "op.resolved":
            steps.append(StepTime("doubt", f"{record.get('op')} settled", seq, at, at,
                                  "happened" if record.get("happened") else "did not happen",
                                  output=record.get("output"), approvers=[f"said by {record.get('by')}"]))
        elif kind == "run.tagged":
            steps.append(StepTime("tag", "tagged", seq, at, at, "ok", input=record.get("tags")))
        before = at
    for step in steps:
        if step.kind == "sleep":
            if end_ms is not None and step.end_ms is not None and step.end_ms > end_ms:
                step.end_ms = end_ms  # the run ended before the sleep did
            step.outcome = "slept" if end_ms is not None or (before or 0) >= (step.end_ms or 0) else "sleeping"
        elif step.end_ms is None and end_ms is not None:
            step.end_ms = end_ms  # still open when the run ended: it ended with the run
            if step.outcome in ("waiting", "running"):
                step.outcome = outcome
    if start_ms is None and ordered:
        start_ms = int(ordered[0].get("at") or 0)
    if waiting is not None and end_ms is None and not any(s.kind == "message" and s.seq > waiting.seq for s in steps):
        since = waiting.since_ms if start_ms is None else max(start_ms, waiting.since_ms)
        steps.append(StepTime("message", waiting.topic, waiting.seq, since, None, "waiting"))
    steps.sort(key=lambda s: (s.start_ms, s.seq))
    return RunTime(start_ms, end_ms, outcome, steps)


def _verdict(decision: Any) -> str:
    if not isinstance(decision, dict) or not decision.get("kind"):
        return ""
    verdict = str(decision["kind"])
    if decision.get("approver"):
        verdict += f" ({decision['approver']})"
    return verdict


def _call(record: dict[str, Any], at: int, first_attempt: int | None,
          approvals: dict[str, StepTime]) -> StepTime:
    took = int(record.get("duration_ms") or 0)
    start = at - took if first_attempt is None else min(first_attempt, at - took)
    error = _error(record)
    decision: dict[str, Any] = record["decision"] if isinstance(record.get("decision"), dict) else {}
    outcome = "denied" if decision.get("kind") == "deny" else "failed" if error else "ok"
    approvers = []
    held = bool(record.get("approval"))
    if held:
        asked = approvals.get(str(record["approval"]))
        approvers = list(asked.approvers) if asked is not None else [f"held for {decision.get('approver')}"]
    return StepTime("call", str(record.get("op", "")), int(record.get("seq") or 0), start, at, outcome,
                    effect=str(record.get("effect", "")), input=record.get("input"), output=record.get("output"),
                    error=error, verdict=_verdict(decision), approvers=approvers,
                    attempts=int(record.get("attempt") or 1), group=_group(record), held=held)
