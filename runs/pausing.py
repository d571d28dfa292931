"""Pausing a vendor, one operation, or a workflow: "the shop's API is down".

A paused connector or operation holds every run that reaches a call to it: the run waits
(`waiting_for: paused shop`) instead of failing, and goes on when it is unpaused; calls already
under way finish. A paused workflow starts nothing new: its new runs stay queued until the
unpause. Each pause and unpause is kept (who, why, when) and logged; only operators with
`runs.pause` may do either.
"""
from __future__ import annotations

import logging
from typing import Any

from django.db import IntegrityError, transaction

from connectors.errors import ErrorCode, InvalidInput, IssueCode, SanomaError, input_issue
from runs.approvals.permissions import Principal, permission_denied, principal_of, visible_runs
from runs.config.registry import get_config
from runs.config.resolution import ResolvedConfig
from runs.engine import clock, controls, pauses, transitions
from runs.models import Pause, PauseKind, Run, RunStatus

log = logging.getLogger("sanoma.pauses")


def _bad(field: str, message: str) -> InvalidInput:
    return InvalidInput(message, data={"issues": [input_issue([field], message, IssueCode.INVALID)]})


def check_target(*, kind: Any, target: Any, config: ResolvedConfig) -> tuple[PauseKind, str]:
    """What a pause names, checked against the config: a connector's vendor, an operation's id,
    or a workflow's name; `invalid_input` listing what exists."""
    if kind not in PauseKind.values:
        raise _bad("kind", f"a pause is of a connector, an operation or a workflow; got {kind!r}")
    if kind == PauseKind.CONNECTOR:
        known = sorted({c.vendor for c in config.connectors if hasattr(c, "vendor")})
    elif kind == PauseKind.OPERATION:
        known = sorted(config.ops)
    else:
        known = sorted(config.workflows)
    if target not in known:
        raise _bad("target", f"No {kind} {target!r}; the {kind}s are {', '.join(known) or 'none'}")
    return PauseKind(kind), target


def kind_of(target: str, config: ResolvedConfig) -> PauseKind:
    """Guess what a bare name means: an operation id, a workflow, else a connector."""
    if target in config.ops:
        return PauseKind.OPERATION
    if target in config.workflows:
        return PauseKind.WORKFLOW
    return PauseKind.CONNECTOR


def _check_can_pause(principal: Principal) -> None:
    if not principal.has_global("runs.pause"):
        raise permission_denied(f"{principal.id} may not pause or unpause: that takes runs.pause (operators)",
                                user=principal.id)


def pause(*, kind: Any, target: Any, reason: Any, by: str | Principal, config: ResolvedConfig | None = None) -> Pause:
    """Pause a connector, an operation or a workflow, saying why."""
    principal = principal_of(by)
    _check_can_pause(principal)
    kind, target = check_target(kind=kind, target=target, config=config or get_config())
    if not isinstance(reason, str) or not reason.strip():
        raise _bad("reason", "a pause needs a reason (what is wrong, for whoever looks at the held runs)")
    active = active_pause(kind=kind, target=target)
    if active is not None:
        raise SanomaError(f"{kind} {target} is already paused, by {active.paused_by} since "
                          f"{active.paused_at.isoformat()}: {active.reason}", code=ErrorCode.INVALID_INPUT,
                          data={"issues": [input_issue(["target"], "already paused", IssueCode.PAUSED)]})
    try:
        with transaction.atomic():
            made = Pause.objects.create(kind=kind, target=target, reason=reason.strip(), paused_by=principal.id,
                                        paused_at=clock.now())
            controls.changed()  # the listening workers read the pauses again (runs.engine.controls)
    except IntegrityError:  # paused by someone else at the same moment: theirs stands
        raise SanomaError(f"{kind} {target} was just paused by someone else", code=ErrorCode.INVALID_INPUT) from None
    transaction.on_commit(pauses.forget)
    pauses.forget()
    log.warning("%s %s paused by %s: %s", kind, target, principal.id, made.reason)
    return made


def unpause(*, kind: Any, target: Any, by: str | Principal, reason: str = "",
            config: ResolvedConfig | None = None) -> Pause:
    """Lift the active pause of a target; the runs it held go on."""
    principal = principal_of(by)
    _check_can_pause(principal)
    if kind not in PauseKind.values:
        raise _bad("kind", f"a pause is of a connector, an operation or a workflow; got {kind!r}")
    now = clock.now()
    with transaction.atomic():
        active = Pause.objects.select_for_update().filter(kind=kind, target=target, unpaused_at__isnull=True).first()
        if active is None:
            raise _bad("target", f"{kind} {target!r} is not paused")
        active.unpaused_at = now
        active.unpaused_by = principal.id
        active.unpause_reason = reason.strip() if isinstance(reason, str) else ""
        active.save(update_fields=["unpaused_at", "unpaused_by", "unpause_reason"])
        controls.changed()
        waiting_for = pauses.waiting_for(active)
        if kind == PauseKind.WORKFLOW:
            resumed = transitions.unpark(waiting_for=waiting_for, now=now)
        else:
            resumed = transitions.wake_held(waiting_for=waiting_for, now=now)
        transaction.on_commit(pauses.forget)
    pauses.forget()
    log.warning("%s %s unpaused by %s; %d run(s) go on", kind, target, principal.id, resumed)
    return active


def held_runs(pause: Pause, *, viewer: str | Principal | None = None) -> list[Run]:
    """The runs an active pause holds now: waiting at a call, or queued before their start; of
    those, only the runs `viewer` may see (`viewer=None`: the runtime itself, which sees all)."""
    status = RunStatus.QUEUED if pause.kind == PauseKind.WORKFLOW else RunStatus.WAITING
    runs = Run.objects.all() if viewer is None else visible_runs(principal_of(viewer))
    return list(runs.filter(status=status, waiting_for=pauses.waiting_for(pause)).order_by("created_at"))


def active_pauses() -> list[Pause]:
    return list(Pause.objects.filter(unpaused_at__isnull=True).order_by("paused_at"))


def active_pause(*, kind: str, target: str) -> Pause | None:
    return Pause.objects.filter(kind=kind, target=target, unpaused_at__isnull=True).first()
