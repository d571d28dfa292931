"""Getting failed work going again: rerun a run, fork it from a step, and rerun or cancel in bulk.

Each is an operator's act (`runs.rerun_runs`; a bulk cancel takes `runs.operate_runs`) on runs
the operator may see. The new run's id is `<source>~<n>` (the n-th rerun or fork of that run);
its `run.started` record names the run it reruns or forks, so the audit links them.

Before either acts, `check_rerun` and `check_fork` answer what it would do, writing nothing: the
source's steps it reuses and those it makes live again, each with what it did and, for a call,
its effect (money, send, write, ...), so the operator sees that a fork of a finished refund sends
the customer's mail again before it does. Every surface shows that plan first (the desk's
confirmation pages, `dry_run` in the API, the commands' list before their question).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction

from connectors.errors import ErrorCode, InvalidInput, IssueCode, SanomaError, describe_issues, input_issue
from runs import ledger, services
from runs.approvals.permissions import Principal, check_can_operate, check_can_rerun, permission_denied, principal_of
from runs.config.registry import get_config
from runs.config.resolution import ResolvedConfig
from runs.config.versioning import version_of
from runs.engine import clock, transitions
from runs.engine.fork import check_fork as check_replay
from runs.errors import RunCode
from runs.models import (
    ENDED_STATUSES,
    Approval,
    ApprovalRequester,
    LedgerKind,
    LedgerRecord,
    Run,
    RunStatus,
    RunTag,
    Step,
    StepKind,
)
from runs.selectors import RunFilter, matching_runs, visible_run
from runs.validation import MAX_RUN_ID_LENGTH, validate_input

RERUNNABLE = (RunStatus.FAILED,)
FORKABLE = ENDED_STATUSES
# A bulk act touches at most this many runs at once: narrow the filter for more.
MAX_BULK = 1000


def _next_id(source: Run) -> str:
    n = Run.objects.filter(source_run=source.id).count() + 1
    run_id = f"{source.id}~{n}"
    if len(run_id) > MAX_RUN_ID_LENGTH:
        raise InvalidInput(f"Run {source.id[:40]}...'s id is too long to make a rerun's id ({run_id[-12:]}) from",
                           data={"run_id": source.id})
    return run_id


def _copy(source: Run, *, config: ResolvedConfig, body: dict[str, Any]) -> Run:
    """A new queued run of the source's workflow, input and starter, on the current code."""
    now = clock.now()
    for _ in range(5):  # two operators rerunning one run at once: the later takes the next number
        run = Run(id=_next_id(source), workflow=source.workflow, app_version=version_of(config, source.workflow),
                  input=source.input,
                  started_by=source.started_by, groups=list(source.groups or ()), source_run=source.id,
                  status=RunStatus.QUEUED, created_at=now, updated_at=now, queued_at=now)
        try:
            with transaction.atomic():
                transitions.start(run=run)
                ledger.build(run, kind=LedgerKind.RUN_STARTED, seq=0, body={"input": source.input, **body},
                             app=config.app_name).save(force_insert=True)
            return run
        except IntegrityError:
            continue
    raise SanomaError(f"Could not number a new run of {source.id}: try again", code=RunCode.RUN_EXISTS,
                      data={"run_id": source.id})


def _source(run_id: str, principal: Principal, allowed: Sequence[str], act: str) -> Run:
    source = visible_run(run_id=run_id, viewer=principal)
    check_can_rerun(principal)
    if source.status not in allowed:
        raise SanomaError(f"Run {run_id} is {source.status}; only a {' or '.join(allowed)} run can be {act}",
                          code=ErrorCode.INVALID_INPUT, data={"status": source.status, "run_id": run_id})
    return source


# ---- what a rerun or a fork would do ------------------------------------------------------------

# Effects that change something outside: made live again, each is done again at its vendor.
SIDE_EFFECTS = ("money", "send", "publish", "write", "access")
# What each means, done again.
AGAIN = {
    "money": "money moves again (a payment or refund is made again)",
    "send": "messages go out again (a mail, a text)",
    "publish": "posts are published again",
    "write": "records are written again",
    "access": "access is granted or revoked again",
}


@dataclass(frozen=True)
class PlannedStep:
    """One step of the source run, as a rerun or fork would treat it."""

    seq: int
    kind: str  # call, approval, sleep, wait, message, run_wait, run_end, tag, now
    name: str  # the operation, the approval's title, the topic, the child run, ...
    effect: str | None  # a call's effect (read, write, publish, send, money, access); None for the rest
    outcome: str  # what the source's step came to: ok, an error code, denied, an approval's status
    again: str  # made live: what the new run does again; reused: what it takes from the source

    @property
    def side_effect(self) -> bool:
        """A call that changes something at its vendor (anything but a read)."""
        return self.effect in SIDE_EFFECTS

    def as_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "kind": self.kind, "name": self.name, "effect": self.effect,
                "outcome": self.outcome, "what": self.again}


@dataclass(frozen=True)
class RecoveryPlan:
    """What a rerun or a fork of `source` would do, before it does it."""

    act: str  # "rerun" or "fork"
    source: Run
    from_step: int | None
    reused: list[PlannedStep] = field(default_factory=list)
    live: list[PlannedStep] = field(default_factory=list)

    @property
    def effects(self) -> list[str]:
        """The side effects (money, send, ...) the live steps had, each once, in SIDE_EFFECTS' order."""
        had = {step.effect for step in self.live}
        return [effect for effect in SIDE_EFFECTS if effect in had]

    @property
    def effects_said(self) -> list[str]:
        """Each side effect of `effects` in words: what is done again."""
        return [AGAIN[effect] for effect in self.effects]

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.source.id, "act": self.act, "from_step": self.from_step,
                "workflow": self.source.workflow, "status": self.source.status,
                "reused": [step.as_dict() for step in self.reused], "live": [step.as_dict() for step in self.live],
                "effects": self.effects}


def _again(kind: str, name: str, effect: str | None, approver: str) -> str:
    """What the new run does again for a step made live. A call the policy held in the source
    (`approver`: whom it was held for) is put to the policy afresh: no approval of a step made live
    is carried into the new run, so a policy that still holds it asks its approver again."""
    asks = (f"; the policy held it for {approver} before: asks {approver} again (the new run asks the policy "
            "afresh, and the earlier approval does not carry over)") if approver else ""
    if kind == "call" and name == "sanoma.run.start":
        return "starts a child run again" + asks
    if kind == "call":
        return f"calls {name} again ({effect or 'effect unknown'}): the vendor sees a new call{asks}"
    return {
        "approval": f"asks {approver} again",
        "sleep": "sleeps again",
        "wait": f"waits for a new message on “{name}”",
        "message": f"reads a new message on “{name}” (the one read before stays with the source)",
        "run_wait": "waits for its child run again",
        "run_end": "reads its child run's end again",
        "tag": "tags the run again",
        "now": "reads the clock again",
    }.get(kind, f"{kind} again")


def _reused(kind: str, name: str, approver: str = "") -> str:
    if kind == "call":
        return f"{name}: its recorded reply is reused, not called again" + (
            f" (held for {approver} before: that decision stands, not asked again)" if approver else "")
    if kind == "approval":
        return "its decision stands"
    return "its recorded outcome is reused"


def _steps_of(source: Run, config: ResolvedConfig) -> list[tuple[int, str, str, str | None, str, str]]:
    """The source's steps and workflow approvals in order: (seq, kind, name, effect, outcome, approver)."""
    effects = {record.seq: record.body.get("effect") for record in
               LedgerRecord.objects.filter(run_id=source.pk, kind=LedgerKind.OP_CALLED).only("seq", "body")}
    rows: list[tuple[int, str, str, str | None, str, str]] = []
    # Whom the policy held each call for (its approvals, by the call's seq; the last one asked).
    held = dict(Approval.objects.filter(run=source, requested_by=ApprovalRequester.POLICY, op_seq__isnull=False)
                .order_by("seq").values_list("op_seq", "approver"))
    for step in Step.objects.filter(run=source).order_by("seq"):
        error = step.error or {}
        decision = step.decision or {}
        outcome = ("denied" if decision.get("kind") == "deny"
                   else (error.get("code") or error.get("name") or "error") if error else "ok")
        effect = effects.get(step.seq) if step.kind == "call" else None
        if step.kind == "call" and effect is None:
            op = config.ops.get(step.name)
            effect = op.effect if op is not None else None
        rows.append((step.seq, step.kind, step.name, effect, outcome, held.get(step.seq, "") if step.kind == "call"
                     else ""))
    for approval in Approval.objects.filter(run=source, requested_by=ApprovalRequester.WORKFLOW).order_by("seq"):
        rows.append((approval.seq, "approval", approval.title, None, approval.status, approval.approver))
    return sorted(rows)


def _plan(act: str, source: Run, from_step: int | None, config: ResolvedConfig) -> RecoveryPlan:
    reused, live = [], []
    for seq, kind, name, effect, outcome, approver in _steps_of(source, config):
        if from_step is not None and seq < from_step:
            reused.append(PlannedStep(seq, kind, name, effect, outcome,
                                      _reused(kind, name, approver if kind == "call" else "")))
        else:
            live.append(PlannedStep(seq, kind, name, effect, outcome, _again(kind, name, effect, approver)))
    return RecoveryPlan(act=act, source=source, from_step=from_step, reused=reused, live=live)


def check_rerun(*, run_id: str, by: str | Principal, config: ResolvedConfig | None = None) -> RecoveryPlan:
    """Everything `rerun` refuses, and what it would do (every step live again), writing nothing."""
    config = config or get_config()
    principal = principal_of(by)
    source = _source(run_id, principal, RERUNNABLE, "rerun")
    if source.workflow not in config.workflows:
        raise SanomaError(f"Workflow {source.workflow} is not in the current code ({config.version})",
                          code=RunCode.WORKFLOW_NOT_FOUND, data={"workflow": source.workflow})
    return _plan("rerun", source, None, config)


def check_fork(*, run_id: str, from_step: Any, by: str | Principal,
               config: ResolvedConfig | None = None) -> RecoveryPlan:
    """Everything `fork` refuses (the current code replayed dry over the steps before
    `from_step`), and what it would do: the steps it reuses and those it makes live. Writes nothing."""
    config = config or get_config()
    principal = principal_of(by)
    source = _source(run_id, principal, FORKABLE, "forked")
    check_replay(source=source, from_step=from_step, config=config)
    return _plan("fork", source, from_step, config)


def rerun(*, run_id: str, by: str | Principal, config: ResolvedConfig | None = None) -> Run:
    """A new run of a failed run's workflow with the same input and starter, from the top."""
    config = config or get_config()
    principal = principal_of(by)
    source = check_rerun(run_id=run_id, by=principal, config=config).source
    return _copy(source, config=config, body={"rerun_of": source.id, "by": principal.id})


def fork(*, run_id: str, from_step: Any, by: str | Principal, config: ResolvedConfig | None = None) -> Run:
    """A new run that reuses the source's steps before `from_step` (their calls are not made
    again) and goes on live from there on the current code. Refused, with nothing written, when
    the current code replays differently over those steps, naming the first step that differs."""
    config = config or get_config()
    principal = principal_of(by)
    source = _source(run_id, principal, FORKABLE, "forked")
    reused = check_replay(source=source, from_step=from_step, config=config)
    with transaction.atomic():
        run = _copy(source, config=config, body={"fork_of": source.id, "from_step": from_step, "by": principal.id})
        # Not runnable until its reused steps are in: the enqueued task finds them (same transaction).
        for step in Step.objects.filter(run=source, seq__lt=from_step).order_by("seq"):
            Step.objects.create(run=run, seq=step.seq, kind=step.kind, name=step.name, output=step.output,
                                error=step.error, decision=step.decision, attempt=step.attempt,
                                next_seq=step.next_seq, created_at=step.created_at)
            if step.kind == StepKind.TAG:  # the business keys a reused tag step gave the run are the fork's too
                for key, value in ((step.output or {}).get("tags") or {}).items():
                    RunTag.objects.update_or_create(run=run, key=key, defaults={"value": value})
        approvals = list(Approval.objects.filter(run=source, seq__lt=from_step).order_by("seq"))
        for approval in approvals:
            Approval.objects.create(
                run=run, approval_id=approval.approval_id, seq=approval.seq, title=approval.title,
                approver=approval.approver, requested_by=approval.requested_by, covers=approval.covers,
                links=approval.links, details=approval.details, op=approval.op, op_input=approval.op_input,
                op_seq=approval.op_seq, status=approval.status, requested_at=approval.requested_at,
                decided_by=approval.decided_by, decided_at=approval.decided_at, note=approval.note,
                decided_with=approval.decided_with, refused=approval.refused)
        if approvals:
            Run.objects.filter(pk=run.pk).update(has_approvals=True)
        ledger.append(ledger.build(run, kind=LedgerKind.RUN_FORKED, seq=0, actor=principal.id, body={
            "source": source.id, "from_step": from_step, "reused": reused, "by": principal.id}, app=config.app_name))
    run.refresh_from_db()
    return run


@dataclass(frozen=True)
class BulkResult:
    matched: int
    done: list[str]  # the new runs (rerun) or the cancelled runs (cancel)
    refused: list[tuple[str, str]]  # (run id, why)


def count_matching(*, where: RunFilter, by: str | Principal) -> int:
    """How many runs a bulk act on `where` would touch: what the operator confirms."""
    return matching_runs(viewer=principal_of(by), where=where).count()


def runs_matching(*, where: RunFilter, by: str | Principal) -> list[Run]:
    """The runs a bulk act on `where` would touch (at most MAX_BULK), to show before it acts."""
    return list(matching_runs(viewer=principal_of(by), where=where)[:MAX_BULK])


def _check_expected(where: RunFilter, principal: Principal, expect: int) -> list[Run]:
    runs = list(matching_runs(viewer=principal, where=where)[: MAX_BULK + 1])
    if len(runs) > MAX_BULK:
        raise InvalidInput(f"The filter matches more than {MAX_BULK} runs; narrow it",
                           data={"issues": [input_issue(["filter"], "too many runs", IssueCode.TOO_MANY)]})
    if isinstance(expect, bool) or not isinstance(expect, int) or len(runs) != expect:
        raise InvalidInput(f"The filter matches {len(runs)} run(s) now, not the {expect} confirmed: look again",
                           data={"matched": len(runs), "issues": [
                               input_issue(["expect"], "count changed", IssueCode.COUNT_CHANGED)]})
    return runs


def rerun_matching(*, where: RunFilter, expect: int, by: str | Principal,
                   config: ResolvedConfig | None = None) -> BulkResult:
    """Rerun every failed run matching `where`, once the operator confirmed `expect` (the count
    they were shown); a different count now refuses, with nothing done."""
    principal = principal_of(by)
    check_can_rerun(principal)
    if where.status not in (None, RunStatus.FAILED):
        raise InvalidInput("Only failed runs are rerun: filter by status failed, or leave status out",
                           data={"issues": [input_issue(["status"], "not failed", IssueCode.INVALID)]})
    where = RunFilter(**{**where.__dict__, "status": RunStatus.FAILED})
    runs = _check_expected(where, principal, expect)
    done, refused = [], []
    for source in runs:
        try:
            done.append(rerun(run_id=source.id, by=principal, config=config).id)
        except SanomaError as err:
            refused.append((source.id, err.message))
    return BulkResult(matched=len(runs), done=done, refused=refused)


def cancel_matching(*, where: RunFilter, expect: int, by: str | Principal, reason: str) -> BulkResult:
    """Cancel every unended run matching `where`, once `expect` is confirmed (see `rerun_matching`),
    each with `reason` (required: a blank one refuses the whole act, with nothing done)."""
    principal = principal_of(by)
    why = services.check_reason(reason)
    runs = [r for r in _check_expected(where, principal, expect) if r.status not in ENDED_STATUSES]
    done, refused = [], []
    for run in runs:
        try:
            check_can_operate(principal, run)
            services.cancel(run_id=run.id, by=principal, reason=why)
            done.append(run.id)
        except SanomaError as err:
            refused.append((run.id, err.message))
    return BulkResult(matched=len(runs), done=done, refused=refused)


def in_doubt_call(run: Run) -> LedgerRecord | None:
    """The `op.intent` of the call a run waits in doubt about (the latest with no checkpoint)."""
    for intent in LedgerRecord.objects.filter(run_id=run.pk, kind=LedgerKind.OP_INTENT).order_by("-seq", "-id"):
        if not Step.objects.filter(run_id=run.pk, seq=intent.seq).exists():
            return intent
    return None


def resolve_in_doubt(*, run_id: str, happened: Any, output: Any = None, by: str | Principal, note: str = "",
                     config: ResolvedConfig | None = None) -> Run:
    """An operator settles a call in doubt: it happened (with the vendor's output, checked against
    the operation's output schema: the run goes on with it) or it did not (the run calls again).
    Recorded as `op.resolved` with who said it; the run is woken."""
    config = config or get_config()
    principal = principal_of(by)
    with transaction.atomic():
        run = visible_run(run_id=run_id, viewer=principal, for_update=True)
        if not principal.has_global("runs.operate_runs"):
            raise permission_denied(f"{principal.id} may not settle calls in doubt: that takes runs.operate_runs",
                                    user=principal.id)
        intent = in_doubt_call(run) if run.status == RunStatus.WAITING and run.waiting_for == "in_doubt" else None
        if intent is None:
            raise SanomaError(f"Run {run_id} has no call in doubt (it is {run.status})", code=ErrorCode.INVALID_INPUT,
                              data={"status": run.status})
        op = config.ops.get(intent.body["op"])
        if op is None:
            raise SanomaError(f"{intent.body['op']} is not in the current code", code=ErrorCode.CONFIG_INVALID)
        if not isinstance(happened, bool):
            raise InvalidInput("Say whether the call happened: true or false", data={"issues": [
                input_issue(["happened"], "must be true or false", IssueCode.TYPE)]})
        if happened:
            output = _checked_output(op, output)
        elif output is not None:
            raise InvalidInput("A call that did not happen has no output: leave it out", data={"issues": [
                input_issue(["output"], "must be absent", IssueCode.INVALID)]})
        attempt = intent.body.get("attempt", 1)
        body = {"op": op.id, "attempt": attempt, "happened": happened, "output": output, "by": principal.id}
        if isinstance(note, str) and note.strip():
            body["note"] = note.strip()
        ledger.append(ledger.build(run, kind=LedgerKind.OP_RESOLVED, seq=intent.seq, key=f"{intent.seq}:{attempt}",
                                   body=body, actor=principal.id, app=config.app_name))
        transitions.wake(run_id=run.pk, now=clock.now())
    run.refresh_from_db()
    return run


def _checked_output(op: Any, output: Any) -> Any:
    """The vendor's output an operator gave, checked against the operation's output schema; a
    mismatch names the output's fields (`output.tracking: Field required`), never "the input"."""
    if output is None:
        raise InvalidInput(f"Give the vendor's output of {op.id}: it happened, so it answered", data={"issues": [
            input_issue(["output"], "required", IssueCode.REQUIRED)]})
    try:
        return validate_input(op.output, output, name=f"{op.id}'s output").model_dump(mode="json")
    except InvalidInput as err:
        issues = [{**issue, "path": ["output", *issue.get("path", [])]}
                  for issue in (err.data or {}).get("issues", [])]
        raise InvalidInput(f"The output does not match {op.id}'s output schema: "
                           f"{describe_issues(issues, whole='output')}", data={"issues": issues}) from None


def runs_in_doubt() -> list[tuple[Run, LedgerRecord]]:
    """Every run waiting in doubt, oldest first, with the call it is in doubt about."""
    found = []
    for run in Run.objects.filter(status=RunStatus.WAITING, waiting_for="in_doubt").order_by("updated_at"):
        intent = in_doubt_call(run)
        if intent is not None:
            found.append((run, intent))
    return found
