"""A run's picture, drawn from its ledger only: start, each call with its effect, decision,
duration and error (a policy hold drawn on its call with the approval's outcome), approvals,
sleeps, messages, child runs, `ctx.all` members as lanes, and the end.

`graph_of(records, ended=...)` answers rows for the page's template: a row is one node, or a
group of lanes (one per `ctx.all` member; a member with nothing recorded yet is "not started"
while the run goes on).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from runs.display import duration, moment
from runs.timing import ended_said


@dataclass
class Node:
    kind: str  # start, call, approval, sleep, message, child, tag, doubt, end
    title: str
    detail: Any = ""
    badge: str = ""  # a call's effect
    outcome: str = ""  # ok, denied, held, failed, approved, rejected, withdrawn, waiting, ...
    error: str = ""
    link: str = ""  # a child run's id
    seq: int = 0
    hold: Node | None = None  # a call's policy hold: the approval, with what became of it


@dataclass
class Fold:
    """Consecutive calls of one operation (a drift of 21 imports): one node with their count,
    opening to the calls themselves."""

    title: str
    nodes: list[Node]
    badge: str = ""
    kind: str = "fold"

    @property
    def count(self) -> int:
        return len(self.nodes)

    @property
    def outcome(self) -> str:
        outcomes = [node.outcome for node in self.nodes]
        return "failed" if "failed" in outcomes else "denied" if "denied" in outcomes else outcomes[0]

    @property
    def detail(self) -> str:
        counts: dict[str, int] = {}
        for node in self.nodes:
            counts[node.outcome] = counts.get(node.outcome, 0) + 1
        return ", ".join(f"{n} {outcome}" for outcome, n in counts.items())


FOLD_AT = 2  # this many consecutive calls of one operation are one node (as on the waterfall)


def _foldable(node: Any) -> bool:
    return isinstance(node, Node) and node.kind == "call" and node.hold is None and node.outcome != "held"


def fold_calls(rows: list[Any]) -> list[Any]:
    """Runs of `FOLD_AT` or more consecutive calls of one operation (none held by a policy) as one
    `Fold`, in the rows and in each `ctx.all` lane."""
    out: list[Any] = []
    index = 0
    while index < len(rows):
        row = rows[index]
        if isinstance(row, Lanes):
            row.lanes = [fold_calls(lane) for lane in row.lanes]
        end = index + 1
        if _foldable(row):
            while end < len(rows) and _foldable(rows[end]) and (rows[end].title, rows[end].badge) == (row.title,
                                                                                                      row.badge):
                end += 1
        out.append(Fold(row.title, rows[index:end], badge=row.badge) if end - index >= FOLD_AT else row)
        if end - index < FOLD_AT:
            out.extend(rows[index + 1:end])
        index = end
    return out


@dataclass
class Lanes:
    group: str
    lanes: list[list[Node]] = field(default_factory=list)
    kind: str = "all"


def _call(record: dict[str, Any]) -> Node:
    decision = record.get("decision") or {}
    error = record.get("error") or {}
    kind = decision.get("kind", "")
    outcome = "failed" if error else "ok"
    if kind == "deny":
        outcome = "denied"
    detail = []
    if kind == "approve" or record.get("approval"):
        detail.append(f"held for {decision.get('approver', 'an approver')}")
    if record.get("attempt", 1) > 1:
        detail.append(f"attempt {record['attempt']}")
    if record.get("duration_ms") is not None:
        detail.append(duration(record.get("duration_ms")))
    if record.get("resolved_by"):
        detail.append(f"settled by {record['resolved_by']}")
    return Node("call", record.get("op", ""), ", ".join(detail), badge=record.get("effect", ""), outcome=outcome,
                error=f"{error.get('code') or 'error'}: {error.get('message', '')}" if error else "",
                seq=record.get("seq", 0))


def graph_of(records: list[dict[str, Any]], *, ended: bool) -> list[Node | Lanes | Fold]:
    rows: list[Node | Lanes] = []
    groups: dict[str, Lanes] = {}
    approvals: dict[str, Node] = {}
    children: dict[str, Node] = {}
    held: dict[str, Node] = {}  # op id -> the call a policy hold stands in for, until the call is recorded

    def place(node: Node, record: dict[str, Any]) -> None:
        group = record.get("group")
        if not group:
            rows.append(node)
            return
        lanes = groups.get(group["id"])
        if lanes is None:
            lanes = groups[group["id"]] = Lanes(group["id"], [[] for _ in range(int(group.get("size", 1)))])
            rows.append(lanes)
        index = int(group.get("index", 0))
        if index < len(lanes.lanes):
            lanes.lanes[index].append(node)

    # In the order things happened: a held call's approval is asked (and decided) before the call
    # is made, though the call's record keeps the call's (smaller) seq.
    for record in sorted(records, key=lambda r: (r.get("at") or 0, r.get("seq", 0))):
        kind = record.get("type", "")
        seq = record.get("seq", 0)
        if kind == "run.started":
            parent = record.get("parent") or record.get("rerun_of") or record.get("fork_of")
            place(Node("start", "started", f"by {record.get('actor')}", link=parent or "", seq=seq), record)
        elif kind == "op.called":
            call = _call(record)
            waiting = held.pop(record.get("op", ""), None)
            if waiting is None:
                place(call, record)
            else:  # the call the policy held: drawn where the hold was, with it
                call.hold = waiting.hold
                for name in (f.name for f in fields(Node)):
                    setattr(waiting, name, getattr(call, name))
        elif kind == "approval.requested":
            node = Node("approval", record.get("title", ""), f"asked of {record.get('approver')}", outcome="waiting",
                        seq=seq)
            approvals[record.get("approval", "")] = node
            if record.get("requested_by") == "policy" and record.get("op"):
                holding = held.get(record["op"])
                if holding is None:
                    holding = held[record["op"]] = Node("call", record["op"], "not called yet", outcome="held",
                                                        seq=seq)
                    place(holding, record)
                holding.hold = node
            else:
                place(node, record)
        elif kind in ("approval.decided", "approval.withdrawn"):
            asked = approvals.get(record.get("approval", ""))
            if asked is not None:
                decided = record.get("decision") or "withdrawn"
                asked.outcome = "approved" if decided == "approve" else "rejected" if decided == "reject" else decided
                asked.detail = f"{asked.detail}; {ended_said(asked.outcome, record, records)}"
        elif kind == "sleep.started":
            place(Node("sleep", "sleep", moment(record.get("until")), seq=seq), record)
        elif kind == "message.received":
            place(Node("message", f"message on “{record.get('topic')}”", f"from {record.get('by')}", seq=seq), record)
        elif kind == "run.child_started":
            error = record.get("error") or {}
            node = Node("child", f"child run of {record.get('workflow')}", outcome="failed" if error else "started",
                        link="" if error else record.get("child", ""),
                        error=f"{error.get('code')}: {error.get('message')}" if error else "", seq=seq)
            children[record.get("child", "")] = node
            place(node, record)
        elif kind == "run.child_ended":
            started = children.get(record.get("child", ""))
            if started is None:
                started = Node("child", "child run", link=record.get("child", ""), seq=seq)
                place(started, record)
            started.outcome = record.get("status", "")
            error = record.get("error") or {}
            started.error = f"{error.get('code')}: {error.get('message')}" if error else ""
        elif kind == "op.intent":
            continue  # drawn by its call, or by the doubt below while the run is in doubt
        elif kind == "op.resolved":
            said = "it happened" if record.get("happened") else "it did not happen"
            place(Node("doubt", f"{record.get('op')} settled", f"{said}, said {record.get('by')}", seq=seq), record)
        elif kind == "run.tagged":
            tags = ", ".join(f"{k}={v}" for k, v in (record.get("tags") or {}).items())
            place(Node("tag", "tagged", tags, seq=seq), record)
        elif kind in ("run.finished", "run.failed", "run.cancelled"):
            error = record.get("error") or {}
            rows.append(Node("end", kind.split(".")[1], outcome=kind.split(".")[1],
                             error=f"{error.get('code') or 'error'}: {error.get('message', '')}" if error else "",
                             seq=seq))
    if not ended:
        for lanes in groups.values():
            for lane in lanes.lanes:
                if not lane:
                    lane.append(Node("pending", "not started", outcome="not-started"))
    # Folded last: a held call is drawn where its hold was, and only settles into a plain call above.
    return fold_calls(rows)
