"""The client: service functions the admin, the API, the commands and the scenarios share.

Each takes keyword arguments and runs in one transaction; permissions are checked here, so every
surface enforces them by calling these.
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from pydantic import ValidationError

from connectors.errors import InvalidInput, SanomaError, describe_issues, error_from_dict, issues_of
from runs import ledger
from runs.engine import clock
from runs.config.resolution import ResolvedConfig
from runs.engine.dispatch import enqueue
from runs.models import ENDED_STATUSES, LedgerRecord, Run, RunStatus
from runs.approvals.permissions import Principal, check_can_start, check_can_view, principal_of, visible_runs
from runs.config.registry import get_config

RESULT_POLL_SECONDS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)


def run_not_found(run_id: str) -> SanomaError:
    return SanomaError(f"No run {run_id}", code="run_not_found", data={"run_id": run_id})


def _workflow_or_error(config: ResolvedConfig, name: Any):
    definition = config.workflows.get(name) if isinstance(name, str) else None
    if definition is None:
        raise InvalidInput(
            f"No workflow {name!r}; the workflows are {', '.join(sorted(config.workflows)) or 'none'}",
            data={"issues": [{"path": ["workflow"], "message": f"no workflow {name!r}", "code": "not_found"}]},
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


def check_start(*, config: ResolvedConfig, workflow: Any, input: Any, started_by: Any) -> tuple[Any, Principal]:
    """Validate a start without writing: the workflow, the input, the starter and their permission."""
    if started_by is not None and not isinstance(started_by, (str, Principal)):
        started_by = principal_of(started_by)  # a Django user
    if not isinstance(started_by, (str, Principal)) or not str(getattr(started_by, "id", started_by)).strip():
        raise InvalidInput(
            "A run needs startedBy: the username of who starts it",
            data={"issues": [{"path": ["startedBy"], "message": "must be a non-blank username", "code": "required"}]},
        )
    definition = _workflow_or_error(config, workflow)
    try:
        definition.input.model_validate({} if input is None else input)
    except ValidationError as err:
        issues = issues_of(err)
        raise InvalidInput(
            f"The input does not match {definition.name}'s schema: {describe_issues(issues)}", data={"issues": issues}
        ) from None
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
    returns the same run; anything else is `invalid_input` naming what differs."""
    return start_or_get(workflow=workflow, input=input, started_by=started_by, run_id=run_id, config=config)[0]


def start_or_get(
    *,
    workflow: str,
    input: Any,
    started_by: str | Principal,
    run_id: str | None = None,
    config: ResolvedConfig | None = None,
) -> tuple[Run, bool]:
    """`start`, also saying whether this call created the run (False: an idempotent repeat)."""
    config = config or get_config()
    input = {} if input is None else input
    definition, principal = check_start(config=config, workflow=workflow, input=input, started_by=started_by)
    if run_id is not None and (not isinstance(run_id, str) or not run_id.strip() or len(run_id) > 200):
        raise InvalidInput("run_id must be a non-blank string of at most 200 characters",
                           data={"issues": [{"path": ["runId"], "message": "invalid run id", "code": "invalid"}]})
    run_id = run_id or f"{definition.name}-{uuid.uuid4().hex[:20]}"
    now = clock.now()
    run = Run(
        id=run_id, workflow=definition.name, app_version=config.version, input=input, started_by=principal.id,
        groups=list(principal.groups), status=RunStatus.QUEUED, created_at=now, updated_at=now, queued_at=now,
    )
    try:
        with transaction.atomic():
            run.save(force_insert=True)
            # The run row is new, so its first record cannot exist yet: a plain insert.
            ledger.build(run, kind="run.started", seq=0, body={"input": input}, app=config.app_name).save(force_insert=True)
            enqueue(run.id)
    except IntegrityError:
        # The id is taken: by an earlier start of the same run (idempotent), or a racing one. It stands.
        existing = Run.objects.get(pk=run_id)
        differs = _differences(existing, definition.name, input, principal.id)
        if differs:
            raise _already_exists(existing, differs) from None
        return existing, False
    return run, True


def get_run(*, run_id: str, viewer: str | Principal | None = None) -> Run | None:
    run = Run.objects.filter(pk=run_id).first()
    if run is not None and viewer is not None and not check_can_view(principal_of(viewer), run, raise_error=False):
        return None
    return run


def _get_run_or_error(run_id: str, viewer: str | Principal | None) -> Run:
    run = get_run(run_id=run_id, viewer=viewer)
    if run is None:
        raise run_not_found(run_id)
    return run


@dataclass(frozen=True)
class RunPage:
    runs: list[Run]
    total: int
    offset: int
    limit: int


def list_runs(
    *,
    viewer: str | Principal | None = None,
    status: str | None = None,
    workflow: str | None = None,
    started_by: str | None = None,
    limit: int = 20,
    offset: int = 0,
) -> RunPage:
    """Runs newest first, filtered; a viewer sees only the runs they may see."""
    if status is not None and status not in RunStatus.values:
        raise InvalidInput(f"status must be one of {', '.join(RunStatus.values)}; got {status!r}",
                           data={"issues": [{"path": ["status"], "message": "unknown status", "code": "invalid"}]})
    if not isinstance(limit, int) or not 1 <= limit <= 500:
        raise InvalidInput("limit must be a whole number from 1 to 500",
                           data={"issues": [{"path": ["limit"], "message": "out of range", "code": "invalid"}]})
    if not isinstance(offset, int) or offset < 0:
        raise InvalidInput("offset must be a whole number from 0",
                           data={"issues": [{"path": ["offset"], "message": "out of range", "code": "invalid"}]})
    runs = Run.objects.all() if viewer is None else visible_runs(principal_of(viewer))
    if status:
        runs = runs.filter(status=status)
    if workflow:
        runs = runs.filter(workflow=workflow)
    if started_by:
        runs = runs.filter(started_by=started_by)
    runs = runs.order_by("-created_at", "-id")
    return RunPage(runs=list(runs[offset : offset + limit]), total=runs.count(), offset=offset, limit=limit)


def ledger_of(*, run_id: str, viewer: str | Principal | None = None) -> list[dict[str, Any]]:
    _get_run_or_error(run_id, viewer)
    return ledger.records_of(run_id)


def result(*, run_id: str, timeout: float = 30.0, viewer: str | Principal | None = None) -> Any:
    """The run's output once it has ended; its error, code kept, if it failed."""
    deadline = time.monotonic() + max(0.0, timeout)
    polls = iter(RESULT_POLL_SECONDS)
    while True:
        run = _get_run_or_error(run_id, viewer)
        if run.status == RunStatus.FINISHED:
            return run.result
        if run.status == RunStatus.FAILED:
            raise error_from_dict(run.error or {"message": "failed"})
        if run.status == RunStatus.CANCELLED:
            raise SanomaError(f"Run {run_id} was cancelled", code="run_cancelled", data={"run_id": run_id})
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise SanomaError(f"Run {run_id} is still {run.status}", code="run_running",
                              data={"run_id": run_id, "status": run.status})
        time.sleep(min(next(polls, 1.0), remaining))


def cancel(*, run_id: str, by: str | Principal) -> Run:
    """Cancel a run that has not ended: it makes no further calls; a run that ended is `run_ended`."""
    from runs.approvals.permissions import check_can_operate

    principal = principal_of(by)
    config = get_config()
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None or not check_can_view(principal, run, raise_error=False):
            raise run_not_found(run_id)
        check_can_operate(principal, run)
        if run.status in ENDED_STATUSES:
            raise SanomaError(f"Run {run_id} has {run.status}; it cannot be cancelled", code="run_ended",
                              data={"status": run.status})
        now = clock.now()
        Run.objects.filter(pk=run_id).update(status=RunStatus.CANCELLED, ended_at=now, updated_at=now,
                                              wake_at=None, waiting_for="")
        seq = (LedgerRecord.objects.filter(run_id=run_id).order_by("-seq").values_list("seq", flat=True).first() or 0) + 1
        ledger.append(ledger.build(run, kind="run.cancelled", seq=seq, key="run", body={"by": principal.id},
                                   app=config.app_name))
    run.refresh_from_db()
    return run


def runs_on_other_versions(*, version: str, limit: int = 5) -> tuple[list[Run], int]:
    others = Run.objects.exclude(status__in=ENDED_STATUSES).exclude(app_version=version).order_by("created_at")
    return list(others[:limit]), others.count()
