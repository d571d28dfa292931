"""The data a policy sees and the decision it gives back, shared by every kind of policy.

Plain Python: the engine builds a `PolicyCall` from the run and hands it to `Policy.decide`.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from runs.approvals.approver import Approver


class DecisionKind(StrEnum):
    """What a policy answers for a call."""

    ALLOW = "allow"  # the call goes ahead
    DENY = "deny"  # the call fails with policy_denied
    APPROVE = "approve"  # the call waits for the named approver


ALLOW = DecisionKind.ALLOW
DENY = DecisionKind.DENY
APPROVE = DecisionKind.APPROVE
KINDS = tuple(DecisionKind)



@dataclass(frozen=True)
class ApprovalView:
    """An approval of the run so far, as a policy sees it."""

    id: str  # "approval-1"
    status: str  # "pending" | "approved" | "rejected" | "withdrawn"
    approver: str  # a person id "alice", or "group:<name>"
    covers: tuple[str, ...] = ()  # operation ids
    # The hold rules it was asked for: it lifts those only (empty: every rule naming its approver).
    rules: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunInfo:
    id: str
    workflow: str
    approvals: tuple[ApprovalView, ...] = ()


@dataclass(frozen=True)
class PolicyCall:
    """One operation call, as plain data."""

    op: dict  # {"id", "vendor", "resource", "name", "effect"}
    effect: str
    target: str | None  # only when the operation declares a target
    input: dict  # the parsed input, as JSON
    actor: str  # who started the run
    groups: tuple[str, ...]
    run: RunInfo
    cover: str = ""  # what an approval must cover to let this call through: the op id, or `<op id>@<target>`
    # A money operation naming its amount: {"cents": 150000, "currency": "EUR"} ("" when none is known).
    money: Mapping[str, Any] | None = None
    # What was spent before this call, in its currency (minor units): see `runs.spend.sums`.
    spent: Mapping[str, Any] | None = None

    @property
    def covered_by(self) -> str:
        return self.cover or self.op_id

    @property
    def op_id(self) -> str:
        return str(self.op.get("id", "")) if isinstance(self.op, Mapping) else str(self.op)


@dataclass(frozen=True)
class Decision:
    kind: str  # "allow" | "deny" | "approve"
    reasons: tuple[str, ...] = ()
    reason: str | None = None  # deny: the message
    approver: str | None = None  # approve: "alice" or "group:finance"
    title: str | None = None  # approve: optional title
    covers: tuple[str, ...] = ()  # approve: extra op ids the approval lets through
    policy_version: str = ""
    policies: tuple[str, ...] = ()  # ids of the policies that made the decision
    self_approval: bool = False  # approve: the run's starter may decide this approval too

    def to_dict(self) -> dict[str, Any]:
        """JSON for the ledger."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "reasons": list(self.reasons),
            "policy_version": self.policy_version,
            "policies": list(self.policies),
        }
        if self.reason is not None:
            out["reason"] = self.reason
        if self.approver is not None:
            out["approver"] = self.approver
        if self.title is not None:
            out["title"] = self.title
        if self.covers:
            out["covers"] = list(self.covers)
        if self.self_approval:
            out["self_approval"] = True
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Decision:
        """The decision back from its ledger JSON (a replay reuses the recorded decision)."""
        return cls(
            kind=str(data["kind"]),
            reasons=tuple(data.get("reasons") or ()),
            reason=data.get("reason"),
            approver=data.get("approver"),
            title=data.get("title"),
            covers=tuple(data.get("covers") or ()),
            policy_version=str(data.get("policy_version") or ""),
            policies=tuple(data.get("policies") or ()),
            self_approval=data.get("self_approval") is True,
        )


@runtime_checkable
class Policy(Protocol):
    version: str
    defined: bool  # False only for allow_all

    def decide(self, call: PolicyCall) -> Decision: ...


def normalise_approver(approver: Any) -> str | None:
    """A person id string, `"group:<name>"`, or `{"group": name}` as the approver string; None when
    it names nobody."""
    found = Approver.normalise(approver)
    return None if found is None else str(found)


def describe_approver(approver: str) -> str:
    """How a title names the approver: "alice", or "group finance" for a group."""
    return Approver.parse(approver).shown


def _field(approval: Any, name: str) -> Any:
    if isinstance(approval, Mapping):
        return approval.get(name)
    return getattr(approval, name, None)


def approval_for(approvals: Iterable[Any], op_id: str, approver: Any, rule: str | None = None) -> Any | None:
    """The first approval that lets `op_id` through for `approver` (see `approved_for`), else None.

    With `rule` (a hold rule's id), only an approval asked for that rule lifts it: one that
    records the rules it was asked for (`rules`) and does not name `rule` was asked about something
    else, and its approver has not seen this hold. One that records none lifts any rule naming its
    approver."""
    wanted = normalise_approver(approver)
    if wanted is None:
        return None
    for approval in approvals or ():
        if _field(approval, "status") != "approved":
            continue
        covers = _field(approval, "covers") or ()
        if op_id not in covers:
            continue
        asked_for = _field(approval, "rules") or ()
        if rule is not None and asked_for and rule not in asked_for:
            continue
        # Exact comparison: person "marketing" and "group:marketing" are different approvers.
        if normalise_approver(_field(approval, "approver")) == wanted:
            return approval
    return None


def approved_for(approvals: Iterable[Any], op_id: str, approver: Any, rule: str | None = None) -> bool:
    """True only if some approval is approved, covers `op_id` and was addressed to the same
    approver (same person id or same group; a person and a group of the same name differ).

    This stops a workflow laundering a sign-off through its own approval addressed to someone else.
    """
    return approval_for(approvals, op_id, approver, rule) is not None
