"""Holds and approvals: asking the policy about a call, and the approvals that wait for a person.

A policy answers each call with a `Decision`: allow, deny, or hold it for an approver. A hold asks
an approval at the next step and suspends the run until the approval is decided; on the advance
after the decision, the call is asked about again (an approver who already let this very call
through is not asked twice for the same rules). An approval lifts only the hold rules it was asked
for (`Approval.rules`): a rule that applies now and that no approval covered asks a new one, even
of the same approver. `ctx.approval` asks one directly. Decision messages sent to a pending
approval are applied here, in arrival order, each under the lease.

A deploy with new policies judges each held call again (`runs.approvals.rejudge`): a hold the new
policy lets through is `released` and the call is asked about again; one it denies is withdrawn by
the policy (`POLICY_ACTOR`, the reason in its note) and the call is refused as a denied call is.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from connectors.errors import ErrorCode, SanomaError, error_code
from connectors.operations import Operation
from runs import ledger
from runs.approvals.approver import Approver
from runs.approvals.rules import (
    POLICY_ACTOR,
    lets_through,
    may_decide,
    rejection_error,
    self_approval_allowed,
    self_approval_details,
)
from runs.config.workflows import Approved
from runs.engine import clock, faults, reconnect
from runs.engine.faults import FaultPoint
from runs.engine.segment import Checkpoint, Segment
from runs.engine.stops import Suspend
from runs.models import (
    Approval,
    ApprovalRequester,
    ApprovalStatus,
    Decision,
    DecisionMessage,
    LedgerKind,
    LedgerRecord,
    MessageOutcome,
    Run,
)
from runs.policies.calls import build_policy_call
from runs.policies.decisions import Decision as PolicyDecision
from runs.policies.decisions import DecisionKind
from runs.policies.versions import policy_version_of
from runs.spend import services as spend
from runs.spend.risk import at_risk
from runs.telemetry import metrics


def judge_call(*, policy: Any, op: Operation, input_json: dict, target: str | None, run: Run,
               approvals: Iterable[Approval], spent: Mapping[str, Any] | None = None,
               seq: int | None = None, ops: Mapping[str, Operation] | None = None) -> PolicyDecision:
    """What `policy` decides about this call of `run`, given the run's approvals so far: the one
    way a call is put to a policy (a run's advance, and `rejudge` of a held call at a deploy).

    A money call is judged with what was spent before it (`spent`, `runs.spend.sums`): the advance
    passes the sums it read under the currency's lock; without them they are read here, unlocked
    (a rejudge, which carries out nothing), listing the money operations of `ops` (the config's)."""
    if spent is None:
        counted = spend.money_call(op=op, input_json=input_json, run_id=run.id, seq=-1 if seq is None else seq,
                                   workflow=run.workflow, starter=run.started_by)
        spent = spend.sums_for(counted, now=clock.now(), ops=ops) if counted is not None else None
    call = build_policy_call(
        op=op, input_json=input_json, target=target, actor=run.started_by, groups=run.groups or (),
        run_id=run.id, workflow=run.workflow, approvals=approvals, spent=spent,
    )
    try:
        return policy.decide(call)
    except SanomaError:
        raise
    except Exception as err:
        raise SanomaError(f"The policy failed deciding {op.id}: {err}",
                          code=error_code(err) or ErrorCode.POLICY_FAILED, data={"op": op.id}) from err


def hold_fields(op: Operation, target: str | None, decision: PolicyDecision,
                money: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What an approval asked by a hold says: its title, approver, what it covers, and the
    policy's permission for the starter to decide it. A held money call's details keep the money
    at risk and what was spent before it (`money`, see `runs.spend.risk.at_risk`)."""
    approver = decision.approver or ""
    details = self_approval_details({"money": dict(money)} if money else None, decision.self_approval)
    return {
        "title": decision.title or f"{op.id} needs {Approver.parse(approver).shown}",
        "approver": approver,
        "covers": list(dict.fromkeys([op.cover(target), *decision.covers])),
        "details": details,
        "rules": list(decision.policies),  # the holds it is asked for: it lifts those only
    }


def call_target(op: Operation, input_json: dict) -> str | None:
    """The target of a call with this input (None when the operation declares none)."""
    if op.target is None:
        return None
    target = op.target(op.input.model_validate(input_json))
    return target if isinstance(target, str) else None


class Holds:
    """The approvals of one advance's run, and the policy's decisions on its calls."""

    def __init__(self, segment: Segment, approvals: Iterable[Approval], messages: Iterable[DecisionMessage]) -> None:
        self.segment = segment
        self.approvals = {a.seq: a for a in approvals}
        # The money calls of this advance whose reservation the decision wrote, by seq: the call's
        # checkpoint settles the row in the same transaction (`runs.engine.calls.Calls.settle`).
        self.reserved: dict[int, spend.MoneyCall] = {}
        self._messages: dict[int, list[DecisionMessage]] = {}
        for message in messages:
            self._messages.setdefault(message.approval_id, []).append(message)

    # ---- the policy ---------------------------------------------------------------------------

    def decide(self, op: Operation, seq: int, input_json: dict, target: str | None,
               ) -> tuple[PolicyDecision, Approval | None]:
        """Ask the policy about the call at `seq`; a hold creates (or finds) an approval and waits
        for it in turn. The decision, and the approval that refused the call (None otherwise)."""
        held = sorted((a for a in self.approvals.values() if a.op_seq == seq), key=lambda a: a.seq)
        for index in range(len(held) + 1):
            approved = [a for a in held[:index] if a.status == ApprovalStatus.APPROVED]
            decision, money = self.policy_decision(op, input_json, target, seq=seq, approved=approved)
            if decision.kind != DecisionKind.APPROVE:
                metrics.policy_decided(decision.kind)  # counted as it takes effect: allowed or denied
                return decision, None
            if any(lets_through(a, decision) for a in approved):
                return decision, None  # that approver already let this very call through, for these rules
            if index == len(held):
                self.request(seq=self.segment.take_seq(), requested_by=ApprovalRequester.POLICY, op=op.id,
                             op_input=input_json, op_seq=seq, **hold_fields(op, target, decision, money))
                metrics.policy_decided(decision.kind)  # held: counted once, as its approval is asked
                raise Suspend("approval")
            approval = held[index]
            self.segment.skip_past(approval.seq)
            self.settle(approval)
            if approval.status == ApprovalStatus.PENDING:
                raise Suspend("approval")
            if approval.status == ApprovalStatus.RELEASED:
                continue  # a newer policy let the call through (`rejudge`): the policy is asked again
            if approval.status == ApprovalStatus.WITHDRAWN and approval.decided_by == POLICY_ACTOR:
                # A newer policy denies the held call (`rejudge`): refused as a denied call is.
                metrics.policy_decided(DecisionKind.DENY)
                return PolicyDecision(kind=DecisionKind.DENY, reason=approval.note,
                                      policy_version=approval.decided_with), None
            if approval.status != ApprovalStatus.APPROVED:
                return decision, approval
        raise SanomaError(f"The policy kept holding {op.id} after {len(held)} approvals; check its @approve rules",
                          code=ErrorCode.POLICY_FAILED, data={"op": op.id})

    def policy_decision(self, op: Operation, input_json: dict, target: str | None, *, seq: int,
                        approved: Sequence[Approval] = (),
                        ) -> tuple[PolicyDecision, dict[str, Any] | None]:
        """The policy's decision, and for a money call the money at risk beside what was spent.

        A money call naming its amount is decided in one transaction under the run's lease and
        its currency's lock (`runs.spend.services.decide`): the sums read, the policy asked with
        them, and, when the call goes ahead (allowed, or held by rules an approval in `approved`
        already let through), its reservation written; two calls decided at once are decided one
        after the other, each counting the other's reservation."""
        run = self.segment.run
        counted = spend.money_call(op=op, input_json=input_json, run_id=run.id, seq=seq, workflow=run.workflow,
                                   starter=run.started_by)

        def judge(spent: Mapping[str, Any] | None) -> PolicyDecision:
            return judge_call(policy=self.segment.config.policy, op=op, input_json=input_json, target=target,
                              run=run, approvals=self.approvals.values(), spent=spent, seq=seq)

        if counted is None:
            return judge(None), None

        def proceeds(decision: PolicyDecision) -> bool:
            if self.segment.sandbox is not None:
                return False  # a sandbox run's money is its fakes': judged by the real sums, counted in none
            return decision.kind == DecisionKind.ALLOW or (
                decision.kind == DecisionKind.APPROVE and any(lets_through(a, decision) for a in approved))

        with self.segment.guarded():
            decision, sums = spend.decide(counted, now=clock.now(), judge=judge, proceeds=proceeds,
                                          ops=self.segment.config.ops)
        if proceeds(decision):
            self.reserved[seq] = counted
        else:
            self.reserved.pop(seq, None)
        return decision, at_risk(counted, sums, policy=self.segment.config.policy, decision=decision)

    # ---- approvals ----------------------------------------------------------------------------

    def request(
        self, *, seq: int, title: str, approver: str, requested_by: str, covers: list[str],
        links: Sequence[str] = (), details: Any = None, op: str = "", op_input: Any = None, op_seq: int | None = None,
        rules: Sequence[str] = (),
    ) -> Approval:
        """Ask an approval at `seq` (its row and its `approval.requested` record together)."""
        number = len(self.approvals) + 1
        approval = Approval(
            run=self.segment.run, approval_id=f"approval-{number}", seq=seq, title=title, approver=approver,
            requested_by=requested_by, covers=list(covers), links=list(links), details=details, op=op,
            op_input=op_input, op_seq=op_seq, requested_at=clock.now(), rules=list(rules),
        )
        body = {"approval": approval.approval_id, "title": title, "approver": approver, "requested_by": requested_by,
                "covers": list(covers)}
        if op:
            body["op"] = op
        if rules:
            body["rules"] = list(rules)
        if requested_by == ApprovalRequester.POLICY:  # which policy held it: a deploy's `rejudge` names it
            body["policy_version"] = policy_version_of(self.segment.config.policy)
        record = self.segment.record(LedgerKind.APPROVAL_REQUESTED, seq, body, key=approval.approval_id)
        self.segment.commit(Checkpoint(records=[record], approval=approval))
        self.approvals[seq] = approval
        return approval

    def wait_for(self, approval: Approval) -> Approved:
        """The approval's decision: `Approved`, the rejection or withdrawal raised, or the run waits."""
        self.segment.skip_past(approval.seq)
        self.settle(approval)
        if approval.status == ApprovalStatus.PENDING:
            raise Suspend("approval")
        if approval.status == ApprovalStatus.APPROVED:
            return Approved(approved_by=approval.decided_by, at=approval.decided_at, note=approval.note,
                            approval_id=approval.approval_id)
        raise rejection_error(approval)

    def settle(self, approval: Approval) -> None:
        """Apply the decision messages sent to a pending approval, in arrival order."""
        run = self.segment.run
        for message in self._messages.pop(approval.id, []):
            if message.applied:
                continue
            if approval.status != ApprovalStatus.PENDING:
                self._apply(approval, message, outcome=MessageOutcome.IGNORED)
                continue
            why: str | None
            if message.decision not in Decision.values:
                why = f"{message.decision!r} is not a decision: send approve or reject"
            else:
                why = may_decide(approval.approver, message.by, message.groups, starter=run.started_by,
                                 self_approval=self_approval_allowed(approval))
            if why is not None:
                approval.refused = [*approval.refused, {"by": message.by, "id": message.message_id,
                                                        "at": clock.now_ms(), "reason": why}]
                key = f"{approval.approval_id}:refused:{len(approval.refused)}"
                record = self.segment.record(LedgerKind.APPROVAL_REFUSED, approval.seq,
                                             {"approval": approval.approval_id, "by": message.by, "reason": why},
                                             key=key, actor=message.by)
                self._apply(approval, message, outcome=MessageOutcome.REFUSED, records=[record])
                continue
            approved = message.decision == Decision.APPROVE
            approval.status = ApprovalStatus.APPROVED if approved else ApprovalStatus.REJECTED
            approval.decided_by = message.by
            approval.decided_at = clock.now()
            approval.note = message.note
            approval.decided_with = message.message_id
            metrics.woke((approval.decided_at - message.sent_at).total_seconds())
            body = {"approval": approval.approval_id, "decision": message.decision, "by": message.by}
            if message.note:
                body["note"] = message.note
            record = self.segment.record(LedgerKind.APPROVAL_DECIDED, approval.seq, body, key=approval.approval_id,
                                         actor=message.by)
            self._apply(approval, message, outcome=MessageOutcome.DECIDED, records=[record])

    def _apply(self, approval: Approval, message: DecisionMessage, *, outcome: MessageOutcome,
               records: Sequence[LedgerRecord] = ()) -> None:
        message.applied = True
        segment = self.segment

        def write() -> bool:
            message.outcome = outcome
            with segment.guarded():
                written = records
                if outcome == MessageOutcome.DECIDED:
                    changed = Approval.objects.filter(pk=approval.pk, status=ApprovalStatus.PENDING).update(
                        status=approval.status, decided_by=approval.decided_by, decided_at=approval.decided_at,
                        note=approval.note, decided_with=approval.decided_with,
                    )
                    if not changed:  # withdrawn meanwhile: the withdrawal stands
                        approval.refresh_from_db(fields=["status", "decided_by", "decided_at", "note", "decided_with"])
                        message.outcome = MessageOutcome.IGNORED
                        written = ()
                elif outcome == MessageOutcome.REFUSED:
                    Approval.objects.filter(pk=approval.pk).update(refused=approval.refused)
                DecisionMessage.objects.filter(pk=message.pk).update(applied=True, outcome=message.outcome)
                for record in written:
                    reconnect.unsaved(record)  # a try rolled back with the connection may have saved it
                    ledger.append(record)
            return True

        def landed() -> bool | None:
            applied = DecisionMessage.objects.filter(pk=message.pk, applied=True).values_list("outcome", flat=True)
            for seen in applied:
                with segment.guarded():
                    pass
                message.outcome = seen
                if seen == MessageOutcome.IGNORED:
                    approval.refresh_from_db(fields=["status", "decided_by", "decided_at", "note", "decided_with"])
                return True
            return None

        faults.point(FaultPoint.BEFORE_DECISION)
        reconnect.ride_out(write, deadline=segment.write_deadline, landed=landed,
                           what=f"run {segment.run.id}: applying decision message {message.message_id}")
