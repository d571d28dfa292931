"""Drift, plan and apply for the surfaces (commands, API, admin): start the built-in run, follow
it, and read its report; the plan with the verdict the policy would give the applier.

A run is followed by a worker (the default) or advanced in this process (`here=True`: the same
engine, one advance after another, as the scenarios and tests drive it). Following stops when the
run ends or waits for an approval: the approvals it waits for are named. Without `here`, `drift`
starts nothing when no worker would run it (`no_worker`, naming `manage.py worker` and `--here`),
and stops following when the worker goes away (`runs.waiting`); a drift run it stops waiting for
(that, the timeout, Ctrl-C) is cancelled if it has not begun, else left and said so.

A plan names the policy version it was judged with; `plan` and `apply` start nothing when the
workers up hold another policy (`plan_policy_changed`, see `changes.plan_policy`).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from changes.models import DriftVerdict
from changes.plan_policy import check_plan_policy, plan_policy_version
from changes.resources.outcome import report_of_failed
from changes.resources.plan import make_plan, summary
from changes.resources.workflows import RECORD_OP, STATUSES
from connectors.errors import ErrorCode, SanomaError
from connectors.operations import resource_types
from runs import services as run_services
from runs.approvals.permissions import Principal, principal_of, visible_runs
from runs.approvals.selectors import nobody_decides
from runs.config.registry import get_config
from runs.config.resolution import ResolvedConfig
from runs.engine import clock
from runs.engine.advance import advance
from runs.errors import RunCode
from runs.models import ENDED_STATUSES, Approval, ApprovalStatus, Run, RunStatus, Step, StepKind
from runs.policies.services import explain_call
from runs.waiting import NO_WORKER, Watch, give_up, require_worker

POLL_SECONDS = 0.2


@dataclass
class Followed:
    run: Run
    waiting: list[dict[str, Any]] = field(default_factory=list)  # pending approvals: {approval, title, approver, op}
    stranded: str = ""  # why no worker will advance the run (following stopped early)

    @property
    def ended(self) -> bool:
        return self.run.status in ENDED_STATUSES


def _config(config: ResolvedConfig | None) -> ResolvedConfig:
    config = config or get_config()
    for name in ("drift", "apply"):
        if name not in config.workflows:
            raise SanomaError(f"The config has no {name} workflow: it has no resource types and no data files "
                              f"(resources/ under its root)", code=ErrorCode.INVALID_INPUT,
                              data={"workflow": name})
    return config


def start(workflow: str, *, by: str | Principal, config: ResolvedConfig | None = None) -> Run:
    config = _config(config)
    return run_services.start(workflow=workflow, input={}, started_by=by, config=config)


def pending(run: Run) -> list[dict[str, Any]]:
    return [{"approval": a.approval_id, "title": a.title, "approver": a.approver, "op": a.op}
            for a in Approval.objects.filter(run=run, status=ApprovalStatus.PENDING).order_by("seq")]


def follow(run: Run, *, here: bool = False, timeout: float = 600.0, config: ResolvedConfig | None = None,
           on_wait: Callable[[list[dict[str, Any]]], None] | None = None, through_waits: bool = False,
           watch: Watch | None = None) -> Followed:
    """Until the run ends, or waits for an approval (unless `through_waits`: then `on_wait` is told
    each time and following goes on, as an approver decides elsewhere), or `timeout` passes, or
    (`watch`) no worker is left to advance it."""
    config = config or get_config()
    deadline = time.monotonic() + timeout
    while True:
        run.refresh_from_db()
        if run.status in ENDED_STATUSES:
            return Followed(run)
        why = watch.stranded(run) if watch is not None and not here else None
        if why:
            return Followed(run, pending(run), stranded=why)
        waits = pending(run)
        if waits and run.status == RunStatus.WAITING:
            if on_wait is not None:
                on_wait(waits)
            if not through_waits or time.monotonic() >= deadline:
                return Followed(run, waits)
            time.sleep(POLL_SECONDS)
            continue
        if time.monotonic() >= deadline:
            return Followed(run, waits)
        if here and run.status == RunStatus.QUEUED:
            advance(run.id, worker_id="in-process", config=config)
        else:
            time.sleep(POLL_SECONDS)


def report(run: Run) -> dict[str, Any]:
    """A finished drift (or apply) run's report, and an incomplete apply's (kept in its error); the
    error of a run that failed otherwise."""
    kept = report_of_failed(run.error) if run.status == RunStatus.FAILED else None
    if kept is not None:
        return kept
    if run.status == RunStatus.FAILED:
        raise SanomaError(f"Run {run.id} failed: {(run.error or {}).get('message', 'failed')}",
                          code=(run.error or {}).get("code") or ErrorCode.INVALID_INPUT, data={"run_id": run.id})
    if run.status != RunStatus.FINISHED:
        raise SanomaError(f"Run {run.id} is {run.status}: its report is not there yet", code=RunCode.RUN_RUNNING,
                          data={"run_id": run.id, "status": run.status})
    return run.result or {}


def latest_drift(viewer: Principal) -> Run | None:
    """The latest finished drift run `viewer` can see (None: none yet)."""
    return visible_runs(viewer).filter(workflow="drift", status=RunStatus.FINISHED).order_by("-ended_at").first()


def made_before_end(run: Run, *, viewer: Principal, config: ResolvedConfig | None = None) -> dict[str, Any]:
    """What an apply that ended without a report (cancelled) made at the vendors: `made`, its vendor
    write calls that succeeded (sanoma's own bookkeeping left out), and `planned`, the write calls
    of the plan after the latest drift run that ended before it started (None when there is none)."""
    config = config or get_config()
    ops = config.ops
    writes = [name for name in Step.objects.filter(run=run, kind=StepKind.CALL, error__isnull=True)
              .values_list("name", flat=True)
              if name in ops and name != RECORD_OP and ops[name].effect != "read"]
    before = (visible_runs(viewer).filter(workflow="drift", status=RunStatus.FINISHED, ended_at__lte=run.created_at)
              .order_by("-ended_at", "-id").first())
    planned = None
    if before is not None:
        planned = sum(len(change["calls"]) for change in plan(before.result or {}, by=run.started_by,
                                                              config=config)["changes"])
    return {"made": len(writes), "planned": planned, "drift_run": before.id if before else None}


def latest_run(viewer: Principal, workflow: str) -> Run | None:
    """The latest run of `workflow` (drift or apply) `viewer` can see, in any status."""
    return visible_runs(viewer).filter(workflow=workflow).order_by("-created_at", "-id").first()


def in_flight(viewer: Principal) -> list[Run]:
    """The drift and apply runs `viewer` can see that have not ended, oldest first."""
    return list(visible_runs(viewer).filter(workflow__in=("drift", "apply")).exclude(status__in=ENDED_STATUSES)
                .order_by("created_at", "id"))


def keep_verdicts(run: Run, drift: dict[str, Any]) -> None:
    """Each resource's latest drift verdict, for the admin; resources no longer declared go. Kept
    once per run: the verdicts of a run already kept are not written again."""
    if DriftVerdict.objects.filter(run_id=run.id).exists() and not DriftVerdict.objects.exclude(
            run_id=run.id).exists():
        return
    now = clock.now()
    rows = {entry["id"]: DriftVerdict(resource=entry["id"], type=entry["type"], status=entry["status"],
                                      diffs=entry.get("diffs", []), error=entry.get("error"), run_id=run.id, at=now)
            for entry in drift.get("resources", [])}
    with transaction.atomic():  # the whole set at once: a reader sees the old run's verdicts or the new one's
        DriftVerdict.objects.all().delete()
        DriftVerdict.objects.bulk_create(list(rows.values()), batch_size=500)


def verdict(config: ResolvedConfig, op_id: str, payload: dict[str, Any], by: str) -> dict[str, Any]:
    """What the policy would decide if `by` applied this call now: allow, deny (why), or held (for whom)."""
    try:
        explained = explain_call(config=config, op_id=op_id, actor=by, input=payload, workflow="apply")
    except SanomaError as err:
        return {"decision": "error", "reason": err.message}
    decided = explained.get("decision") or {}
    kind = decided.get("kind") or "error"
    out: dict[str, Any] = {"decision": {"approve": "held"}.get(kind, kind)}
    if decided.get("reason"):
        out["reason"] = decided["reason"]
    if kind == "approve":
        out["approver"] = decided.get("approver")
        out["title"] = decided.get("title") or ""
        # A hold nobody could decide (the applier is the approver's only member) deadlocks the apply.
        nobody = nobody_decides(str(out["approver"] or ""), starter=by, starter_does="is the one applying",
                                self_approval=decided.get("self_approval") is True)
        if nobody:
            out["nobody"] = nobody
    if explained.get("error"):
        out["reason"] = explained["error"].get("message")
    return out


def plan(drift: dict[str, Any], *, by: str, config: ResolvedConfig | None = None) -> dict[str, Any]:
    """The changes apply would make after this drift report, each call with its verdict."""
    config = _config(config)
    types = resource_types(config.connectors)
    entries = drift.get("resources", [])
    changes = make_plan(declared=entries, report=entries, managed=drift.get("managed", []), types=types)
    waits: list[str] = []
    for change in changes:
        for call in change["calls"]:
            call["verdict"] = verdict(config, call["op"], call["input"], by)
            if call["verdict"]["decision"] == "held":
                waits.append(call["verdict"]["approver"])
        # A change one of whose calls the policy denies will be refused: said before anyone applies.
        change["refused"] = any(call["verdict"]["decision"] == "deny" for call in change["calls"])
        # One that is not refused but waits for an approval nobody could decide never gets made.
        change["stuck"] = not change["refused"] and any(call["verdict"].get("nobody") for call in change["calls"])
    counts = summary(changes)
    refused = sum(1 for change in changes if change["refused"])
    stuck = sum(1 for change in changes if change["stuck"])
    return {"changes": changes, "summary": counts, "empty": not changes, "policy_version": plan_policy_version(config),
            "refused": refused, "all_refused": bool(changes) and refused == len(changes), "stuck": stuck,
            "holds": {approver: waits.count(approver) for approver in dict.fromkeys(waits)},
            "drift": drift.get("summary", dict.fromkeys(STATUSES, 0)), "problems": drift.get("problems", [])}


def refused_text(plan: dict[str, Any], *, to: str) -> str:
    """What the plan shows the policy will refuse (`to`: whom, "you" on the desk); "" when nothing."""
    refused, total = plan["refused"], len(plan["changes"])
    if not refused:
        return ""
    if plan["all_refused"]:
        return f"The policy denies every change of this plan to {to}: an apply would make none of them"
    return (f"{refused} of {total} changes will be refused: the policy denies {'it' if refused == 1 else 'them'} "
            f"to {to} (marked denied below)")


def held_text(verdict: dict[str, Any]) -> str:
    """A held call's verdict in words: `held for group:security`, and when nobody could decide it,
    `held for group:security, whose only member (sam) is the one applying: nobody could decide it`."""
    text = f"held for {verdict.get('approver') or 'an approver'}"
    return f"{text}, {verdict['nobody']}: nobody could decide it" if verdict.get("nobody") else text


def stuck_text(plan: dict[str, Any]) -> str:
    """What the plan shows would wait for ever (holds nobody could decide); "" when nothing."""
    stuck, total = plan.get("stuck", 0), len(plan["changes"])
    if not stuck:
        return ""
    return (f"{stuck} of {total} changes would wait for an approval nobody could decide (marked below): an apply "
            f"would hold {'it' if stuck == 1 else 'them'} until cancelled; ask for someone else to apply, or for "
            "another member of the approving group")


def apply_label(plan: dict[str, Any]) -> str:
    """The Apply button's words: plain when the plan would go through, else what it would not make."""
    total = len(plan["changes"])
    said = [f"{plan['refused']} of {total} will be refused"] if plan["refused"] else []
    if plan.get("stuck"):
        said.append(f"{plan['stuck']} of {total} would wait for an approval nobody can decide")
    return f"Apply ({'; '.join(said)})" if said else "Apply"


def check_apply(*, by: str | Principal, config: ResolvedConfig | None = None, plan_version: str | None = None) -> None:
    """Refuse an apply the workers would decide with another policy than the plan's
    (`plan_policy_changed`: `plan_version`, the one the plan shown was judged with, default this
    config's), or one the plan after the latest drift already shows the policy refuses whole:
    every change of it denied for `by` (`policy_denied`). An empty plan, or one with a change the
    policy lets through or holds, may be applied."""
    check_plan_policy(plan_policy_version(config or get_config()) if plan_version is None else plan_version)
    viewer = principal_of(by)
    latest = latest_drift(viewer)
    if latest is None:
        return  # no plan to judge by: the apply's own drift shows what there is
    shown = plan(latest.result or {}, by=viewer.id, config=config)
    if shown["all_refused"]:
        raise SanomaError(f"{refused_text(shown, to=viewer.id)} (the plan after drift run {latest.id}); nothing "
                          "was started", code=ErrorCode.POLICY_DENIED,
                          data={"drift_run": latest.id, "refused": shown["refused"], "planned": len(shown["changes"])})


def drift(*, by: str | Principal, here: bool = False, timeout: float = 600.0,
          config: ResolvedConfig | None = None, purpose: str = "drift") -> tuple[Run, dict[str, Any]]:
    """Start a drift run, follow it to its end, keep the verdicts: (run, report). Without `here`, a
    worker must be up (`no_worker` otherwise, nothing started); `purpose` names the command."""
    config = _config(config)
    if not here:
        run_services.check_start(config=config, workflow="drift", input={}, started_by=by)
        if purpose in ("plan", "apply"):  # a worker on another policy is said as that, before "no worker"
            check_plan_policy(plan_policy_version(config))
        require_worker(config.version, what=f"{purpose} waits for a drift run")
    run = start("drift", by=by, config=config)
    try:
        followed = follow(run, here=here, timeout=timeout, config=config, watch=Watch(config.version))
    except KeyboardInterrupt:
        raise SanomaError(f"Interrupted: {give_up(run, by=by, why=f'{purpose} was interrupted')}",
                          code=RunCode.RUN_RUNNING, data={"run_id": run.id}) from None
    if not followed.ended:
        if followed.stranded:
            left = give_up(run, by=by, why=f"no worker ran it: {followed.stranded}")
            raise SanomaError(f"{purpose} stopped waiting: {followed.stranded}; {left}", code=NO_WORKER,
                              data={"run_id": run.id, "status": run.status})
        if not followed.waiting:
            left = give_up(run, by=by, why=f"{purpose} stopped waiting after {timeout:g} s")
            raise SanomaError(f"Run {run.id} has not ended within {timeout:g} s; {left}", code=RunCode.RUN_RUNNING,
                              data={"run_id": run.id, "status": run.status})
        raise SanomaError(f"Run {run.id} has not ended: it is {run.status}"
                          + (f", waiting for {followed.waiting[0]['approver']}" if followed.waiting else ""),
                          code=RunCode.RUN_RUNNING, data={"run_id": run.id, "status": run.status})
    found = report(run)
    keep_verdicts(run, found)
    return run, found


__all__ = ["Followed", "apply_label", "check_apply", "drift", "follow", "held_text", "in_flight", "keep_verdicts",
           "latest_drift", "latest_run", "made_before_end", "pending", "plan", "refused_text", "report", "start",
           "stuck_text", "verdict"]
