"""Advancing a run: claim its lease, replay the workflow from the top, and end or suspend it.

One advance per run at a time: the claim is a conditional UPDATE (portable to SQLite), so a
task django-q2 delivers twice, or two hosts sweeping at once, still run the body once.
"""
from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from pydantic import ValidationError
from pydantic_core import to_jsonable_python

from connectors.errors import InvalidInput, SanomaError, describe_issues, error_to_dict, issues_of
from runs import ledger
from runs.engine import clock
from runs.engine import fastpath
from runs.config.resolution import ResolvedConfig
from runs.engine.context import Cancelled, LeaseLost, RunContext, Suspend
from runs.engine.dispatch import enqueue
from runs.models import Approval, DecisionMessage, Run, RunStatus
from runs.config.registry import get_config

log = logging.getLogger("sanoma.engine")


_CLAIM_RETURNING = """
UPDATE runs_run SET status = %s, lease_owner = %s, lease_until = %s, waiting_for = '', wake_at = NULL, updated_at = %s
WHERE id = %s AND app_version = %s AND status IN (%s, %s) AND (lease_until IS NULL OR lease_until < %s)
RETURNING *
"""


def claim(run_id: str, *, worker_id: str, version: str) -> Run | None:
    """Take the run's lease if it is free; the claimed run, or None."""
    now = clock.now()
    until = now + timedelta(seconds=settings.SANOMA_LEASE_SECONDS)
    if connection.vendor == "postgresql":  # one round trip: claim and read together
        claimed = list(Run.objects.raw(_CLAIM_RETURNING, [
            RunStatus.RUNNING, worker_id, until, now, run_id, version, RunStatus.QUEUED, RunStatus.RUNNING, now]))
        return claimed[0] if claimed else None
    updated = (
        Run.objects.filter(pk=run_id, app_version=version, status__in=(RunStatus.QUEUED, RunStatus.RUNNING))
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .update(status=RunStatus.RUNNING, lease_owner=worker_id, lease_until=until, waiting_for="", wake_at=None,
                updated_at=now)
    )
    return Run.objects.get(pk=run_id) if updated else None


def advance(run_id: str, *, worker_id: str, config: ResolvedConfig | None = None) -> str:
    """Advance one run by one segment. Returns what happened: finished, failed, waiting,
    queued (handed back), skipped (not claimable here), or lost (taken over or cancelled)."""
    config = config or get_config()
    run = claim(run_id, worker_id=worker_id, version=config.version)
    if run is None:
        other = Run.objects.filter(pk=run_id).exclude(app_version=config.version).values_list("app_version", flat=True).first()
        if other:
            log.warning("leaving run %s alone: it runs version %s; this worker runs %s", run_id, other, config.version)
        return "skipped"
    definition = config.workflows.get(run.workflow)
    if definition is None:
        return _fail(run, worker_id, config, SanomaError(f"Workflow {run.workflow} is not in {config.version}"), seq=1)
    ctx = RunContext(
        run=run,
        definition=definition,
        config=config,
        worker_id=worker_id,
        steps={s.seq: s for s in run.steps.all()},
        approvals=list(Approval.objects.filter(run=run)) if run.has_approvals else [],
        messages=(list(DecisionMessage.objects.filter(approval__run=run, applied=False).order_by("id"))
                  if run.has_approvals else []),
        segment_seconds=settings.SANOMA_SEGMENT_SECONDS,
    )
    try:
        try:
            payload = definition.input.model_validate(run.input)
        except ValidationError as err:
            issues = issues_of(err)
            raise InvalidInput(f"The input does not match {definition.name}'s schema: {describe_issues(issues)}",
                               data={"issues": issues}) from None
        output = definition.run(ctx, payload)
    except Suspend as suspension:
        ctx.close()
        return _suspend(run, worker_id, ctx.signal_gen, suspension)
    except (LeaseLost, Cancelled) as stop:
        ctx.close()
        log.info("run %s: advance stopped (%s)", run_id, type(stop).__name__)
        return "lost"
    except Exception as err:
        ctx.close()
        return _fail(run, worker_id, config, err, seq=ctx.next_seq)
    ctx.close()
    return _finish(run, worker_id, config, output, seq=ctx.next_seq)


def _end(run: Run, worker_id: str, config: ResolvedConfig, *, status: str, kind: str, body: dict[str, Any],
         seq: int, result: Any = None, error: Any = None) -> str:
    now = clock.now()
    record = ledger.build(run, kind=kind, seq=seq, body=body, app=config.app_name)
    if fastpath.available():
        return status if fastpath.end_run(run_id=run.pk, worker_id=worker_id, status=status, result=result,
                                           error=error, now=now, record=record) else "lost"
    with transaction.atomic():
        ended = Run.objects.filter(pk=run.pk, lease_owner=worker_id, status=RunStatus.RUNNING).update(
            status=status, result=result, error=error, lease_owner="", lease_until=None, updated_at=now, ended_at=now,
        )
        if not ended:
            return "lost"
        # Only the lease holder ends a run, once: its closing record cannot exist yet.
        record.save(force_insert=True)
    return status


def _finish(run: Run, worker_id: str, config: ResolvedConfig, output: Any, *, seq: int) -> str:
    try:
        result = to_jsonable_python(output.model_dump(mode="json") if hasattr(output, "model_dump") else output)
    except Exception as err:
        return _fail(run, worker_id, config, SanomaError(f"The workflow returned a value that is not JSON: {err}"), seq=seq)
    return _end(run, worker_id, config, status=RunStatus.FINISHED, kind="run.finished", body={"output": result},
                seq=seq, result=result)


def _fail(run: Run, worker_id: str, config: ResolvedConfig, err: BaseException, *, seq: int) -> str:
    error = error_to_dict(err)
    if not isinstance(err, SanomaError) or err.code is None:
        log.info("run %s failed: %s", run.id, err, exc_info=not isinstance(err, SanomaError))
    return _end(run, worker_id, config, status=RunStatus.FAILED, kind="run.failed", body={"error": error},
                seq=seq, error=error)


def _suspend(run: Run, worker_id: str, signal_gen: int, suspension: Suspend) -> str:
    now = clock.now()
    mine = Run.objects.filter(pk=run.pk, lease_owner=worker_id, status=RunStatus.RUNNING)
    with transaction.atomic():
        if not suspension.requeue:
            waited = mine.filter(signal_gen=signal_gen).update(
                status=RunStatus.WAITING, waiting_for=suspension.waiting_for, wake_at=suspension.wake_at,
                lease_owner="", lease_until=None, updated_at=now,
            )
            if waited:
                return "waiting"
        # Handed back: the segment ran long, or a decision arrived while this advance ran.
        requeued = mine.update(status=RunStatus.QUEUED, lease_owner="", lease_until=None, queued_at=now, updated_at=now)
        if not requeued:
            return "lost"
        enqueue(run.pk)
    return "queued"


def wake(run_id: str) -> bool:
    """Make a waiting run runnable now and enqueue it; a running one is told to look again.

    Call inside the transaction that records why (a decision, a withdrawal).
    """
    now = clock.now()
    woken = Run.objects.filter(pk=run_id, status=RunStatus.WAITING).update(
        status=RunStatus.QUEUED, wake_at=None, waiting_for="", queued_at=now, updated_at=now,
        signal_gen=F("signal_gen") + 1,
    )
    if woken:
        enqueue(run_id)
        return True
    Run.objects.filter(pk=run_id).update(signal_gen=F("signal_gen") + 1, updated_at=now)
    return False

