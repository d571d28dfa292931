"""Approvals announced where people are: a message to the company's channel for each approval asked.

`announce_asked` runs inside the transaction that asks the approval (the engine's checkpoint): it
writes the announcement's outbox row and queues its delivery task with it, so an approval is
never committed without its announcement, and a worker that dies right after loses nothing. The
run never waits for it: the message is posted after commit by the worker's cluster (`deliver`).

Delivery is at most once as far as the vendor allows. Slack has no idempotency key, so a delivery
first claims the row (`sending`, until its deadline) and the post carries the row's key in its
metadata; a claim that outlived its deadline (the worker died mid-post, or the answer was lost) is
in doubt, and the next delivery asks the connector's reconcile read (`slack.message.find`) whether
the message is in the channel before posting again. A 429 waits for its `Retry-After`; a final
refusal (`channel_not_found`) marks the row failed with the vendor's code. The worker's loop
(`sweep_due`) queues deliveries whose time came (a retry, a claim past its deadline, a lost task).
Operators see every announcement and its state in the desk (Approval announcements).
"""
from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import Any

from django.db.models import F, Q
from django_q.tasks import async_task

from connectors.drivers import CallContext
from connectors.errors import DriverTimeout, error_to_dict
from connectors.operations import Operation
from connectors.operations.summaries import summarize
from runs.approvals.announce_checks import desk_address
from runs.approvals.announce_models import AnnouncementStatus, ApprovalAnnouncement
from runs.approvals.announce_text import announcement_text
from runs.config.registry import get_config
from runs.engine import calling, clock, secrets

log = logging.getLogger("sanoma.announce")

DELIVER_TASK = "runs.approvals.announce.deliver_task"
TIMEOUT = 10.0  # seconds a post may take
CLAIM_MARGIN = 1.0  # past the post's deadline, a claim is in doubt
QUEUED_FOR = timedelta(seconds=30)  # a queued delivery not started by then is queued again
MAX_ATTEMPTS = 8
BACKOFF = (2.0, 5.0, 15.0, 60.0, 300.0)
SWEEP_EVERY = 1.0
BATCH = 50


def announce_asked(approval: Any, config: Any) -> ApprovalAnnouncement | None:
    """In the transaction asking `approval`: its announcement row and delivery task, when the config
    announces approvals (`SanomaConfig(announce_approvals=slack_channel(...))`)."""
    target = getattr(config, "announce_approvals", None)
    if target is None:
        return None
    text = _text(approval, config, target)
    now = clock.now()
    row = ApprovalAnnouncement.objects.create(
        approval=approval, run_id=approval.run_id, key=f"announce:{approval.run_id}:{approval.approval_id}",
        op=target.op, message=target.message(text), next_at=now, created_at=now, queued_until=now + QUEUED_FOR)
    async_task(DELIVER_TASK, row.pk, task_name=f"announce {row.pk}"[:100])
    return row


def _text(approval: Any, config: Any, target: Any) -> str:
    """The announcement's text; what cannot be said (a summary that does not render) is left out
    rather than failing the approval's checkpoint."""
    op = config.ops.get(approval.op) if approval.op else None
    try:
        money = op.money_of(approval.op_input) if op is not None and isinstance(approval.op_input, dict) else None
        summary = summarize(op, approval.op_input) if op is not None else ""
    except Exception:
        log.warning("approval %s of run %s: its summary could not be said", approval.approval_id, approval.run_id,
                    exc_info=True)
        money, summary = None, ""
    return announcement_text(approval, summary=summary, money=money.shown if money else "", desk=desk_address(target))


def deliver_task(pk: int) -> str:
    """The django-q2 task: deliver one announcement with the site's config."""
    return deliver(pk, config=get_config())


def _claim(pk: int) -> tuple[ApprovalAnnouncement, bool] | None:
    """Take the announcement for one delivery: (the row, whether an earlier post may have landed),
    or None when it is not due or another delivery has it."""
    now = clock.now()
    due = Q(status=AnnouncementStatus.PENDING, next_at__lte=now) | Q(status=AnnouncementStatus.SENDING,
                                                                    claimed_until__lt=now)
    row = ApprovalAnnouncement.objects.filter(due, pk=pk).first()
    if row is None:
        return None
    in_doubt = row.status == AnnouncementStatus.SENDING
    taken = ApprovalAnnouncement.objects.filter(pk=pk, status=row.status, attempts=row.attempts).update(
        status=AnnouncementStatus.SENDING, attempts=F("attempts") + 1, queued_until=None,
        claimed_until=now + timedelta(seconds=TIMEOUT + CLAIM_MARGIN))
    if not taken:
        return None
    row.refresh_from_db()
    return row, in_doubt


def _context(row: ApprovalAnnouncement, op: Operation) -> CallContext:
    return CallContext(idempotency_key=row.key, run_id=row.run_id, op_id=op.id, attempt=row.attempts,
                       secrets=secrets.for_connector(op.vendor), timeout=TIMEOUT, deadline=time.time() + TIMEOUT)


def _settle(row: ApprovalAnnouncement, **fields: Any) -> None:
    ApprovalAnnouncement.objects.filter(pk=row.pk, status=AnnouncementStatus.SENDING, attempts=row.attempts).update(
        **fields)


def _retry(row: ApprovalAnnouncement, err: BaseException, *, in_doubt: bool) -> str:
    """Try again later: after the vendor's `Retry-After`, else the backoff; in doubt (the post may
    have landed) the row stays claimed until then, so the next delivery reads the channel first."""
    if row.attempts >= MAX_ATTEMPTS:
        _settle(row, status=AnnouncementStatus.FAILED, error=error_to_dict(err), claimed_until=None)
        return "failed"
    wait = getattr(err, "retry_after", None) or BACKOFF[min(row.attempts - 1, len(BACKOFF) - 1)]
    at = clock.now() + timedelta(seconds=float(wait))
    if in_doubt:
        _settle(row, claimed_until=at, next_at=at, error=error_to_dict(err))
    else:
        _settle(row, status=AnnouncementStatus.PENDING, next_at=at, claimed_until=None, error=error_to_dict(err))
    return "retry"


def deliver(pk: int, *, config: Any) -> str:
    """Post one announcement if it is due: `delivered`, `retry`, `failed`, or `skipped` (not due, or
    another delivery has it)."""
    claimed = _claim(pk)
    if claimed is None:
        return "skipped"
    row, in_doubt = claimed
    op = config.ops.get(row.op)
    driver = config.drivers.get(row.op)
    if op is None or driver is None:
        _settle(row, status=AnnouncementStatus.FAILED, claimed_until=None,
                error={"message": f"{row.op} is not in the config: add its connector to post announcements"})
        return "failed"
    parsed = op.input.model_validate(row.message)
    if in_doubt:
        found = _reconciled(row, op, parsed, config)
        if found is None:
            return "retry"
        if found.get("happened"):
            _settle(row, status=AnnouncementStatus.DELIVERED, output=found.get("output"), delivered_at=clock.now(),
                    claimed_until=None, reconciled=True)
            return "delivered"
    try:
        reply = calling.invoke(driver, op, parsed, _context(row, op), TIMEOUT + CLAIM_MARGIN / 2)
        output = op.output.model_validate(reply).model_dump(mode="json")
    except Exception as err:
        # A post that timed out may have landed: looked for before it is posted again.
        retryable = getattr(err, "retryable", None) is True or isinstance(err, DriverTimeout)
        log.warning("announcement %s of run %s: %s", row.pk, row.run_id, err, extra={"run_id": row.run_id})
        if not retryable:
            _settle(row, status=AnnouncementStatus.FAILED, error=error_to_dict(err), claimed_until=None)
            return "failed"
        # Refused before it was taken (429) it did not land; anything else may have.
        return _retry(row, err, in_doubt=getattr(err, "status", None) != 429)
    _settle(row, status=AnnouncementStatus.DELIVERED, output=output, delivered_at=clock.now(), claimed_until=None,
            error=None)
    return "delivered"


def _reconciled(row: ApprovalAnnouncement, op: Operation, parsed: Any, config: Any) -> dict[str, Any] | None:
    """The reconcile read's answer on a post that may have landed; None when it could not say
    (the row then waits, still in doubt)."""
    read = config.ops.get(op.reconcile) if op.reconcile else None
    reader = config.drivers.get(read.id) if read is not None else None
    if read is None or reader is None:
        # No way to look: better a missing announcement than a second one.
        _settle(row, status=AnnouncementStatus.FAILED, claimed_until=None,
                error={"message": f"{op.id} may have been posted; {op.vendor} has no read to tell"})
        return None
    try:
        answer = calling.invoke(reader, read, parsed, _context(row, read), TIMEOUT)
        return read.output.model_validate(answer).model_dump(mode="json")
    except Exception as err:
        _retry(row, err, in_doubt=True)
        return None


def due(*, unqueued: bool = True) -> list[int]:
    """Announcements whose delivery time came (and, with `unqueued`, that no queued task covers)."""
    now = clock.now()
    found = ApprovalAnnouncement.objects.filter(
        Q(status=AnnouncementStatus.PENDING, next_at__lte=now)
        | Q(status=AnnouncementStatus.SENDING, claimed_until__lt=now))
    if unqueued:
        found = found.filter(Q(queued_until__isnull=True) | Q(queued_until__lt=now))
    return list(found.order_by("next_at")
                .values_list("pk", flat=True)[:BATCH])


_next_sweep = 0.0


def sweep_due() -> int:
    """The worker loop's part (about once a second): queue a delivery for each announcement due."""
    global _next_sweep
    if time.monotonic() < _next_sweep:
        return 0
    _next_sweep = time.monotonic() + SWEEP_EVERY
    queued = 0
    for pk in due():
        if ApprovalAnnouncement.objects.filter(pk=pk).filter(
                Q(queued_until__isnull=True) | Q(queued_until__lt=clock.now())).update(
                queued_until=clock.now() + QUEUED_FOR):
            async_task(DELIVER_TASK, pk, task_name=f"announce {pk}"[:100])
            queued += 1
    return queued


def deliver_due(*, config: Any) -> list[str]:
    """Deliver every announcement due, here (tests, and a command run by hand)."""
    return [deliver(pk, config=config) for pk in due(unqueued=False)]
