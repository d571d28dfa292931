"""Helpers for the policy tests: building calls, writing policy files, a tiny engine loop."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from textwrap import dedent

from runs.policies import ApprovalView, Decision, Policy, PolicyCall, RunInfo, load_cedar_policy

EFFECTS = {
    "shop.order.refund": "money",
    "shop.order.note": "write",
    "shop.order.read": "read",
    "bluesky.post.create": "publish",
    "mastodon.status.create": "publish",
    "mail.message.send": "send",
}


def op_of(op_id: str, effect: str | None = None) -> dict:
    vendor, resource, name = op_id.split(".")
    return {
        "id": op_id,
        "vendor": vendor,
        "resource": resource,
        "name": name,
        "effect": effect or EFFECTS.get(op_id, "write"),
    }


def make_call(
    op_id: str = "shop.order.refund",
    *,
    input: dict | None = None,
    actor: str = "bob",
    groups: tuple[str, ...] = (),
    target: str | None = None,
    approvals: tuple[ApprovalView, ...] = (),
    effect: str | None = None,
    workflow: str = "refunds",
    run_id: str = "run-1",
) -> PolicyCall:
    op = op_of(op_id, effect)
    return PolicyCall(
        op=op,
        effect=op["effect"],
        target=target,
        input=dict(input or {}),
        actor=actor,
        groups=tuple(groups),
        run=RunInfo(id=run_id, workflow=workflow, approvals=tuple(approvals)),
    )


def approved(n: int, approver: str, *covers: str, status: str = "approved") -> ApprovalView:
    return ApprovalView(id=f"approval-{n}", status=status, approver=approver, covers=tuple(covers))


def write_policies(root: Path, files: dict[str, str]) -> Path:
    directory = root / "policies"
    directory.mkdir(exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(dedent(text).lstrip("\n"), encoding="utf-8")
    return directory


def cedar(root: Path, text: str = "", **files: str):
    """A Cedar policy from one file `main.cedar` (and/or named files)."""
    if text:
        files = {"main.cedar": text, **files}
    return load_cedar_policy(write_policies(root, {k.replace("_cedar", ".cedar"): v for k, v in files.items()}))


@dataclass
class Run:
    """A run as the engine would drive it: each held call gets a policy approval (covering the held
    op plus the decision's covers) that the approver then approves; `vendor_calls` are the calls
    that got through."""

    policy: Policy
    actor: str = "bob"
    groups: tuple[str, ...] = ()
    approvals: list[ApprovalView] = field(default_factory=list)
    vendor_calls: list[str] = field(default_factory=list)
    decisions: list[tuple[str, Decision]] = field(default_factory=list)

    def request_approval(self, approver: str, covers: tuple[str, ...], status: str = "approved") -> ApprovalView:
        approval = ApprovalView(f"approval-{len(self.approvals) + 1}", status, approver, covers)
        self.approvals.append(approval)
        return approval

    def call(
        self, op_id: str, input: dict | None = None, target: str | None = None, *, approve: bool = True
    ) -> list[ApprovalView]:
        """Call until allowed; returns the approvals the call needed. Stops at a deny or at a hold
        that nobody approves (`approve=False`)."""
        needed: list[ApprovalView] = []
        for _ in range(10):
            call = make_call(
                op_id, input=input, target=target, actor=self.actor, groups=self.groups,
                approvals=tuple(self.approvals),
            )
            decision = self.policy.decide(call)
            self.decisions.append((op_id, decision))
            if decision.kind == "allow":
                self.vendor_calls.append(op_id)
                return needed
            if decision.kind == "deny":
                return needed
            assert decision.approver is not None  # a hold names who may lift it
            approval = self.request_approval(
                decision.approver, (op_id, *decision.covers), "approved" if approve else "pending"
            )
            needed.append(approval)
            if not approve:
                return needed
        raise AssertionError("the call never settled")
