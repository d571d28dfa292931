"""The client: service functions the admin, the API, the commands and the scenarios share.

Each takes keyword arguments and runs in one transaction; permissions are checked here, so every
surface enforces them by calling these.
"""
from __future__ import annotations

import uuid
from typing import Any

from django.db import IntegrityError, transaction

from connectors.errors import InvalidInput, IssueCode, SanomaError, input_issue
from runs import ledger
from runs.approvals.permissions import (
    Principal,
    check_can_operate,
    check_can_send_message,
    check_can_start,
    may_start_any,
    principal_of,
    start_permission_id,
)
from runs.config.registry import get_config
from runs.config.resolution import ResolvedConfig
from runs.config.versioning import version_of
from runs.config.workflows import WorkflowDefinition
from runs.direct_calls.workflow import CALL_WORKFLOW
from runs.engine import clock, dispatch, transitions
from runs.errors import RunCode
from runs.models import ENDED_STATUSES, LedgerKind, LedgerRecord, Run, RunMessage, RunStatus
from runs.selectors import visible_run
from runs.validation import (
    check_message_id,
    check_payload,
    check_run_id,
    check_topic,
    is_valid_run_id,
    validate_input,
)


def _workflow_or_error(config: ResolvedConfig, name: Any) -> WorkflowDefinition:
    definition = config.workflows.get(name) if isinstance(name, str) else None
    if definition is None:
        raise InvalidInput(
            f"No workflow {name!r}; the workflows are {', '.join(sorted(config.workflows)) or 'none'}",
            data={"issues": [input_issue(["workflow"], f"no workflow {name!r}", IssueCode.NOT_FOUND)]},
        )
    return definition


def _differences(run: Run, workflow: str, input: Any, started_by: str) -> list[str]:
    differs = []
    if run.workflow != workflow:
        differs.append("workflow")
    if run.input != input:
        differs.append("input")
    if run.started_by != started_by:
        differs.append("startedBy")
    return differs


def _already_exists(run: Run, differs: list[str]) -> InvalidInput:
    return InvalidInput(
        f"Run {run.id} already exists with a different {', '.join(differs)}; use another run id",
        data={"differs": differs, "run_id": run.id},
    )


def _run_exists(run_id: str) -> SanomaError:
    return SanomaError(f"Run {run_id} already exists; use another run id", code=RunCode.RUN_EXISTS,
                       data={"run_id": run_id})


def check_input(*, config: ResolvedConfig, workflow: Any, input: Any) -> None:
    """Validate a workflow's input alone, writing nothing: `invalid_input` naming every field that is
    wrong (a form checks what it could read, so each bad field is said at once)."""
    definition = _workflow_or_error(config, workflow)
    validate_input(definition.input, {} if input is None else input, name=definition.name)


def check_start(*, config: ResolvedConfig, workflow: Any, input: Any, started_by: Any) -> tuple[Any, Principal]:
    """Validate a start without writing: the workflow, the input, the starter and their permission."""
    if started_by is not None and not isinstance(started_by, (str, Principal)):
        started_by = principal_of(started_by)  # a Django user
    if not isinstance(started_by, (str, Principal)) or not str(getattr(started_by, "id", started_by)).strip():
        raise InvalidInput(
            "A run needs startedBy: the username of who starts it",
            data={"issues": [input_issue(["startedBy"], "must be a non-blank username", IssueCode.REQUIRED)]},
        )
    definition = _workflow_or_error(config, workflow)
    validate_input(definition.input, {} if input is None else input, name=definition.name)
    principal = principal_of(started_by)
    check_can_start(principal, definition.name)
    return definition, principal


def start(
    *,
    workflow: str,
    input: Any,
    started_by: str | Principal,
    run_id: str | None = None,
    config: ResolvedConfig | None = None,
) -> Run:
    """Start a run. With `run_id`, starting again with the same workflow, input and starter
    returns the same run; anything else is `invalid_input` naming what differs, or `run_exists`
    (and nothing more) when the caller may not see that run."""
    return start_or_get(workflow=workflow, input=input, started_by=started_by, run_id=run_id, config=config)[0]


def start_or_get(
    *,
    workflow: str,
    input: Any,
    started_by: str | Principal,
    run_id: str | None = None,
    config: ResolvedConfig | None = None,
) -> tuple[Run, bool]:
    """`start`, also saying whether this call created the run (False: an idempotent repeat).

    One transaction: the starter's and the workflow's checks read in it, then the run, its task
    (and NOTIFY) and its `run.started` record written together. On PostgreSQL the usual start is
    that transaction as one statement (`_start_in_one_statement`)."""
    config = config or get_config()
    input = {} if input is None else input
    if transitions.one_statement() and dispatch.enqueues_in_one_statement():
        started = _start_in_one_statement(config=config, workflow=workflow, input=input, started_by=started_by,
                                          run_id=run_id)
        if started is not None:
            return started, True
    with transaction.atomic():
        definition, principal = check_start(config=config, workflow=workflow, input=input, started_by=started_by)
        if run_id is not None:
            check_run_id(run_id)
        run_id = run_id or f"{definition.name}-{uuid.uuid4().hex[:20]}"
        now = clock.now()
        run = Run(
            id=run_id, workflow=definition.name, app_version=version_of(config, definition.name), input=input,
            started_by=principal.id,
            groups=list(principal.groups), status=RunStatus.QUEUED, created_at=now, updated_at=now, queued_at=now,
        )
        try:
            with transaction.atomic():
                transitions.start(run=run)
                # The run row is new, so its first record cannot exist yet: a plain insert.
                ledger.build(run, kind=LedgerKind.RUN_STARTED, seq=0, body={"input": input},
                             app=config.app_name).save(force_insert=True)
        except IntegrityError:
            # The id is taken: by an earlier start of the same run (idempotent), or a racing one. It stands.
            # A caller who may not see that run learns only that the id is taken, never what differs.
            try:
                existing = visible_run(run_id=run_id, viewer=principal)
            except SanomaError:
                raise _run_exists(run_id) from None
            differs = _differences(existing, definition.name, input, principal.id)
            if differs:
                raise _already_exists(existing, differs) from None
            return existing, False
    return run, True


def _start_in_one_statement(*, config: ResolvedConfig, workflow: Any, input: Any, started_by: Any,
                            run_id: str | None) -> Run | None:
    """The usual start in one statement (PostgreSQL): a starter who may start any workflow, a run
    id not taken. The run, or None when the statement wrote nothing (the starter is unknown, not
    allowed, or allowed only on some workflows; the id is taken or not valid; any conflict): the
    ORM way then starts it, or says why not, as it always did. The checks that come before the
    starter's in `check_start` (the starter given, the workflow, its input) are made here first,
    so a start refused for them is refused the same way."""
    if isinstance(started_by, Principal):
        if not str(started_by.id).strip() or not may_start_any(started_by):
            return None
        groups: tuple[str, ...] | None = started_by.groups
        starter = started_by.id
    elif isinstance(started_by, str) and started_by.strip():
        groups, starter = None, started_by
    else:
        return None  # a Django user, or nothing: `check_start` reads or refuses it
    definition = _workflow_or_error(config, workflow)
    validate_input(definition.input, input, name=definition.name)
    if run_id is not None and not is_valid_run_id(run_id):
        return None  # refused after the starter's checks, as the ORM way orders them
    run_id = run_id or f"{definition.name}-{uuid.uuid4().hex[:20]}"
    now = clock.now()
    run = Run(
        id=run_id, workflow=definition.name, app_version=version_of(config, definition.name), input=input,
        started_by=starter, groups=[] if groups is None else list(groups), status=RunStatus.QUEUED,
        created_at=now, updated_at=now, queued_at=now,
    )
    record = ledger.build(run, kind=LedgerKind.RUN_STARTED, seq=0, body={"input": input}, app=config.app_name)
    try:
        started = transitions.start_in_one_statement(
            run=run, record=record, groups=groups, permission_id=None if groups is not None else start_permission_id())
    except IntegrityError:
        return None
    return run if started else None


def cancel(*, run_id: str, by: str | Principal, reason: str) -> Run:
    """Cancel a run that has not ended: it makes no further calls; a run that ended is `run_ended`.
    Cancelling asks why: `reason` (non-blank text) goes to the `run.cancelled` record, whose actor
    is the canceller (`by`). The run's pending approvals are withdrawn with it.

    Its unfinished child runs (and theirs) are cancelled with it, each with its own
    `run.cancelled` record naming the run whose cancel reached it; a parent waiting for a
    cancelled child is woken to read it (`run_cancelled`)."""
    principal = principal_of(by)
    config = get_config()
    with transaction.atomic():
        run = visible_run(run_id=run_id, viewer=principal, for_update=True)
        check_can_operate(principal, run)
        if run.status in ENDED_STATUSES:
            raise SanomaError(f"Run {run_id} has {run.status}; it cannot be cancelled", code=RunCode.RUN_ENDED,
                              data={"status": run.status})
        why = check_reason(reason)
        _do_cancel(run, by=principal.id, body={"by": principal.id, "reason": why}, config=config)
        parents = [run.pk]
        while parents:
            descendants = list(Run.objects.select_for_update().filter(parent_id__in=parents)
                               .exclude(status__in=ENDED_STATUSES).order_by("created_at"))
            for child in descendants:
                because = f"its parent run {child.parent_id} was cancelled"
                _do_cancel(child, by=principal.id, body={"by": principal.id, "reason": why, "because": because},
                           config=config)
            parents = [child.pk for child in descendants]
    run.refresh_from_db()
    return run


MAX_REASON = 2000


def check_reason(reason: Any) -> str:
    """Why a run is cancelled: non-blank text of at most MAX_REASON characters; answered stripped."""
    if not isinstance(reason, str) or len(reason) > MAX_REASON or "\x00" in reason:
        raise InvalidInput(f"A reason is text of at most {MAX_REASON} characters",
                           data={"issues": [input_issue(["reason"], "not a reason", IssueCode.INVALID)]})
    if not reason.strip():
        raise InvalidInput("Say why the run is cancelled: the reason is kept in its ledger",
                           data={"issues": [input_issue(["reason"], "required: say why", IssueCode.REQUIRED)]})
    return reason.strip()


def _do_cancel(run: Run, *, by: str, body: dict[str, Any], config: ResolvedConfig) -> None:
    """Cancel one run whose row the caller locked, with its `run.cancelled` record (the canceller
    its actor) and its pending approvals withdrawn; wake its parent."""
    now = clock.now()
    last = LedgerRecord.objects.filter(run_id=run.pk).order_by("-seq").values_list("seq", flat=True).first()
    record = ledger.build(run, kind=LedgerKind.RUN_CANCELLED, seq=(last or 0) + 1, key="run", body=body,
                          app=config.app_name, actor=by)
    if not transitions.cancel(run=run, now=now, record=record):
        return
    if run.parent_id is not None:
        transitions.wake_parent(run_id=run.parent_id, now=now)


def send_message(*, run_id: str, topic: str, payload: Any, message_id: str | None = None,
                 by: str | Principal) -> RunMessage:
    """Send a message to a run on `topic`; the run reads it with `ctx.wait_message(topic)`.

    Refused, with nothing kept: a run `by` may not see (`run_not_found`, first), a sender who may
    not send to it (`permission_denied`), a bad topic, payload or id (`invalid_input`), a run that
    ended (`run_ended`), a direct call's run (`invalid_input`: it reads none). The message id
    (generated when absent) makes a retried send count once:
    sending an id again returns the message first sent with it. A run waiting for messages is
    woken in the same transaction; one that waits for something else reads it when it waits.
    """
    principal = principal_of(by)
    with transaction.atomic():
        run = visible_run(run_id=run_id, viewer=principal, for_update=True)
        check_can_send_message(principal, run)
        check_topic(topic)
        check_payload(payload)
        check_message_id(message_id)
        if message_id is not None:
            first = RunMessage.objects.filter(run=run, message_id=message_id).first()
            if first is not None:
                return first
        if run.status in ENDED_STATUSES:
            raise SanomaError(f"Run {run_id} has {run.status}; it takes no more messages", code=RunCode.RUN_ENDED,
                              data={"status": run.status, "run_id": run_id})
        if run.workflow == CALL_WORKFLOW:  # one operation called, nothing more: a message would never be read
            raise InvalidInput(f"Run {run_id} is a direct call (one operation called outside any workflow); it reads "
                               "no messages", data={"run_id": run_id, "issues": [
                                   input_issue(["run_id"], "a direct call reads no messages")]})
        message = RunMessage(run=run, topic=topic, payload=payload, message_id=message_id or uuid.uuid4().hex,
                             sent_by=principal.id, sent_at=clock.now())
        try:
            with transaction.atomic():
                message.save(force_insert=True)
        except IntegrityError:  # the same id, sent at the same moment: the first stands
            return RunMessage.objects.get(run=run, message_id=message.message_id)
        if not (run.status == RunStatus.WAITING and run.waiting_for != "message"):
            # A sleeper or an approval waiter reads it when it reaches its wait; a running run is
            # told to look again before it suspends.
            transitions.wake(run_id=run.pk, now=clock.now())
    return message
