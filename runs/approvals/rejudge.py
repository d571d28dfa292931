"""Held calls judged again by a new policy: what a deploy that changes the policies (and
`manage.py rejudge`) does to every call a policy held for an approval.

Each approval a policy asked for (`requested_by=policy`) that is still pending on a run that has
not ended is put to the new policy with the same call data the run's advance gives it
(`runs.engine.holds.judge_call`: the operation, its input and target, who started the run, the
run's approvals). The answer:

- **allowed** (or held for an approver who already let this very call through): the approval is
  `released` (kept as evidence, no longer asked of anyone) with an `approval.released` record
  naming the policy versions before and after, and the run is woken: its advance meets the
  released approval, asks the policy again, and the call goes ahead.
- **denied**: the approval is withdrawn by the policy (`POLICY_ACTOR`, the reason in its note, the
  policy's own version in `decided_with`) with an `approval.withdrawn` record saying why, and the run is
  woken: the call fails with `policy_denied`, as a call denied when first asked does.
- **held for another approver**: the approval is changed in place to the new approver (title,
  covers and self-approval as the hold would now ask them) with an `approval.reassigned` record
  `{from, to}`. In place rather than withdrawn and asked anew: an approval's `seq` is a step of its
  run, so only the run itself may take a new one; the same row keeps the run's record consistent,
  reaches the new approver's inbox at once (not after a worker's advance), and a decision the old
  approver sends later is refused by the run as one from someone who may not decide it.
- **held for the same approver**: nothing changes.

One transaction per approval, with the run's row and then the approval's locked (the order a
worker applying a decision takes them); an approval no longer pending when its turn comes is left
as it is, so running it again changes nothing. `dry_run` judges without writing: what a change's
review shows before its merge.
"""
from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from pydantic import ValidationError

from connectors.errors import SanomaError, describe_issues, issues_of
from connectors.operations import Operation
from runs import ledger
from runs.approvals.permissions import grant_approver, revoke_approver
from runs.approvals.rules import POLICY_ACTOR, lets_through
from runs.config.resolution import ResolvedConfig, root_below
from runs.config.trees import process_env
from runs.engine import clock
from runs.engine.advance import wake
from runs.engine.children import START_RUN
from runs.engine.holds import call_target, hold_fields, judge_call
from runs.models import ENDED_STATUSES, Approval, ApprovalRequester, ApprovalStatus, LedgerKind, LedgerRecord, Run
from runs.policies.decisions import DecisionKind
from runs.policies.versions import policy_version_of

log = logging.getLogger("sanoma.rejudge")

Outcome = Literal["released", "reassigned", "refused", "kept", "failed"]


@dataclass(frozen=True)
class Verdict:
    """What the new policy says of one held call (no write made yet)."""

    approval: Approval
    outcome: Outcome
    reason: str = ""
    to: str | None = None  # reassigned: the new approver
    fields: dict[str, Any] = field(default_factory=dict)  # reassigned: the approval's new title, covers...

    def plain(self) -> dict[str, Any]:
        return {"approval": self.approval.approval_id, "run": self.approval.run_id, "operation": self.approval.op,
                "from": self.approval.approver, "to": self.to, "reason": self.reason}


@dataclass
class Rejudged:
    """The held calls a new policy released, reassigned and refused (`failed`: those it could not
    judge, left as they were, each with why)."""

    released: list[dict] = field(default_factory=list)
    reassigned: list[dict] = field(default_factory=list)
    refused: list[dict] = field(default_factory=list)
    failed: list[dict] = field(default_factory=list)

    def add(self, verdict: Verdict) -> None:
        if verdict.outcome != "kept":
            getattr(self, verdict.outcome).append(verdict.plain())

    def plain(self, *, policy_version: str) -> dict[str, Any]:
        """The JSON `manage.py rejudge --json` prints."""
        return {"policy_version": policy_version, "released": self.released, "reassigned": self.reassigned,
                "refused": self.refused, "failed": self.failed}

    @property
    def changed(self) -> int:
        return len(self.released) + len(self.reassigned) + len(self.refused)


def held_by_policy(versions: Collection[str] | None = None) -> QuerySet[Approval]:
    """Pending approvals a policy asked for, on runs that have not ended (of `versions` only, when
    given), run by run in order."""
    held = (Approval.objects.filter(status=ApprovalStatus.PENDING, requested_by=ApprovalRequester.POLICY)
            .exclude(op="").exclude(run__status__in=ENDED_STATUSES))
    if versions is not None:
        held = held.filter(run__app_version__in=list(versions))
    return held.order_by("run_id", "seq")


def operation_of(config: ResolvedConfig, op_id: str) -> Operation | None:
    """The operation a held call calls, in `config` (the engine's own `ctx.start_run` too)."""
    return config.ops.get(op_id) or (START_RUN if op_id == START_RUN.id else None)


def judge_held(*, approval: Approval, config: ResolvedConfig, run: Run | None = None) -> Verdict:
    """What `config`'s policy decides now about the call `approval` holds, with the call data the
    run's advance would give it. Writes nothing."""
    run = run or approval.run
    op = operation_of(config, approval.op)
    if op is None:
        return Verdict(approval, "failed", reason=f"the operation {approval.op} is not in this config")
    input_json = approval.op_input if isinstance(approval.op_input, dict) else {}
    try:
        target = call_target(op, input_json)
    except ValidationError as err:
        return Verdict(approval, "failed", reason=f"its input no longer matches {op.id}'s schema: "
                                                  f"{describe_issues(issues_of(err))}")
    approvals = list(Approval.objects.filter(run_id=run.pk).order_by("seq"))
    try:
        decision = judge_call(policy=config.policy, op=op, input_json=input_json, target=target, run=run,
                              approvals=approvals, ops=config.ops)
    except SanomaError as err:
        return Verdict(approval, "failed", reason=err.message)
    if decision.kind == DecisionKind.ALLOW:
        return Verdict(approval, "released", reason="; ".join(decision.reasons) or "the policy now allows it")
    if decision.kind == DecisionKind.DENY:
        return Verdict(approval, "refused", reason=decision.reason or "denied")
    approver = decision.approver or ""
    # As the advance decides: an approver who already let this very call through is not asked twice.
    if any(a.op_seq == approval.op_seq and a.seq < approval.seq and lets_through(a, decision) for a in approvals):
        return Verdict(approval, "released", reason=f"{approver} already approved this call")
    if approver == approval.approver:
        return Verdict(approval, "kept")
    return Verdict(approval, "reassigned", reason=f"the policy now holds it for {approver}", to=approver,
                   fields=hold_fields(op, target, decision))


def rejudge_held(*, config: ResolvedConfig, dry_run: bool = False,
                 versions: Collection[str] | None = None) -> Rejudged:
    """Judge every held call again with `config`'s policy and act on each answer (see the module);
    with `dry_run`, only say what would be done. `versions`: only the held calls of runs on these
    versions (a deploy passes its live workflow versions: a run pinned to older code goes on with
    that code's worker, whose policy would hold a released call again)."""
    found = Rejudged()
    version = policy_version_of(config.policy)
    for pk, run_id in list(held_by_policy(versions).values_list("pk", "run_id")):
        verdict = _rejudge_one(pk, run_id, config=config, version=version, dry_run=dry_run)
        if verdict is not None:
            found.add(verdict)
    return found


def _rejudge_one(pk: int, run_id: str, *, config: ResolvedConfig, version: str, dry_run: bool) -> Verdict | None:
    """One approval, in its own transaction; None when it is no longer pending (or its run ended)."""
    with transaction.atomic():
        runs = Run.objects.filter(pk=run_id)
        approvals = Approval.objects.filter(pk=pk)
        if not dry_run:  # the run's row first, as a worker applying a decision takes them
            runs, approvals = runs.select_for_update(), approvals.select_for_update()
        run = runs.first()
        approval = approvals.first()
        if run is None or approval is None or run.status in ENDED_STATUSES or approval.status != ApprovalStatus.PENDING:
            return None
        verdict = judge_held(approval=approval, config=config, run=run)
        if verdict.outcome == "failed":
            log.warning("run %s: %s could not be judged again: %s", run.id, approval.approval_id, verdict.reason)
        if dry_run or verdict.outcome in ("kept", "failed"):
            return verdict
        _carry_out(verdict, run=run, config=config, version=version)
    return verdict


def held_with(approval: Approval) -> str:
    """The policy version that holds `approval` now: the one that last reassigned it, else the one
    that asked it ("" for an approval asked before holds named their policy)."""
    records = LedgerRecord.objects.filter(run_id=approval.run_id, seq=approval.seq,
                                          kind__in=(LedgerKind.APPROVAL_REQUESTED, LedgerKind.APPROVAL_REASSIGNED))
    latest = ""
    for kind, body in records.order_by("id").values_list("kind", "body"):
        body = body or {}
        latest = str(body.get("to_policy" if kind == LedgerKind.APPROVAL_REASSIGNED else "policy_version") or latest)
    return latest


def _carry_out(verdict: Verdict, *, run: Run, config: ResolvedConfig, version: str) -> None:
    approval, now = verdict.approval, clock.now()
    body: dict[str, Any] = {"approval": approval.approval_id, "op": approval.op, "reason": verdict.reason,
                            "from_policy": held_with(approval), "to_policy": version}
    pending = Approval.objects.filter(pk=approval.pk, status=ApprovalStatus.PENDING)
    if verdict.outcome == "reassigned":
        pending.update(**verdict.fields)
        revoke_approver(approval)  # the old approver's inbox drops it, the new one's shows it
        grant_approver(Approval.objects.get(pk=approval.pk))
        count = LedgerRecord.objects.filter(
            run_id=run.id, record_id__startswith=ledger.record_id(run.id, LedgerKind.APPROVAL_REASSIGNED,
                                                                  f"{approval.approval_id}:")).count()
        ledger.append(ledger.build(run, kind=LedgerKind.APPROVAL_REASSIGNED, seq=approval.seq,
                                   key=f"{approval.approval_id}:{count + 1}", app=config.app_name, actor=POLICY_ACTOR,
                                   body={**body, "from": approval.approver, "to": verdict.to}))
        return
    released = verdict.outcome == "released"
    # The policy closes it: released (the call is asked about again and goes ahead), or withdrawn
    # because the policy now denies the call (the advance refuses the call with this reason).
    pending.update(status=ApprovalStatus.RELEASED if released else ApprovalStatus.WITHDRAWN, decided_by=POLICY_ACTOR,
                   decided_at=now, note=verdict.reason, decided_with=str(getattr(config.policy, "version", "")))
    kind = LedgerKind.APPROVAL_RELEASED if released else LedgerKind.APPROVAL_WITHDRAWN
    extra = {"approver": approval.approver} if released else {"by": POLICY_ACTOR, "denied": True}
    ledger.append(ledger.build(run, kind=kind, seq=approval.seq, key=approval.approval_id, app=config.app_name,
                               actor=POLICY_ACTOR, body={**body, **extra}))
    wake(run.id)


# ---- another tree's policy -------------------------------------------------------------------

TREE_SECONDS = 300.0


class TreeError(Exception):
    """Another tree's policy could not judge the held calls: the tree is missing, its config or its
    policy does not load, or its process failed. The message says which."""


def rejudge_tree(*, tree: Path, timeout: float = TREE_SECONDS) -> dict[str, Any]:
    """What another checkout of the company (a change's head) would do to the held calls: its
    policy judges them in a process of its own (`manage.py rejudge --json --dry-run` with
    SANOMA_ROOT set to `tree`, on this process's database), so its modules never meet this
    process's. Nothing is changed. The JSON `manage.py rejudge --json` prints."""
    tree = Path(tree).expanduser()
    if not tree.is_dir():
        raise TreeError(f"--tree {tree}: no such folder")
    if not (tree / "sanoma_config.py").is_file():
        raise TreeError(f"--tree {tree}: not a company root (it has no sanoma_config.py){root_below(tree)}")
    env = process_env(tree)
    try:
        done = subprocess.run([sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "rejudge", "--json",
                               "--dry-run"], env=env, cwd=settings.BASE_DIR, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TreeError(f"--tree {tree}: its policy did not judge the held calls within {timeout:g} s") from None
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip() or f"exit status {done.returncode}").replace(
            "CommandError: ", "")
        raise TreeError(f"--tree {tree}: {said}")
    try:
        found = json.loads(done.stdout)
    except json.JSONDecodeError as err:
        raise TreeError(f"--tree {tree}: its process printed no JSON ({err})") from None
    return {"tree": str(tree.resolve()), **found}


__all__ = ["Rejudged", "TreeError", "Verdict", "held_by_policy", "held_with", "judge_held",
           "operation_of", "rejudge_held", "rejudge_tree"]
