"""Every change of a run's status and lease, in one place.

A run row moves through these states:

    queued --claim--> running --end--> finished | failed
      ^                  |  \\--suspend--> waiting --wake / wake_due--> queued
      |                  \\--hand_back--> queued
      \\--take_over-- running (lease expired)          any unended --cancel--> cancelled

Each transition is one conditional UPDATE that names the state it leaves, so two workers (or two
hosts sweeping at once) racing for the same run change it once: the loser's update matches no
row and it learns it lost. Where the engine's hot path needs it on PostgreSQL, the one-statement
form (the change and its ledger record in one round trip) sits right beside its ORM twin, so a
change to the run table is one edit in this module.

Transitions that make a run runnable enqueue its django-q2 task in the same transaction: the ORM
broker's insert commits or rolls back with the row.

The cancel/lease handshake. `cancel` sets the status to cancelled while leaving `lease_owner` as
it is. A worker advancing that run finds out at its next guarded write: the write checks
`lease_owner = me AND status = running`, matches nothing, and `lease_check` reads the row back.
If the owner is still this worker and the status is cancelled, the run was cancelled under it:
the advance stops (`Cancelled`) having recorded what already happened, and makes no further call.
Any other answer means another worker took the run over (`LeaseLost`): the advance stops without
writing anything. Because `end` and `suspend` also require `status = running`, a cancelled run is
never ended or suspended afterwards, and its `run.cancelled` record is the last word.

Approvals end with their run. A run that ends (finished, failed or cancelled, a child cancelled
with its parent included) leaves nothing to decide: every approval still pending is withdrawn by
the runtime (`RUNTIME_ACTOR`), with an `approval.withdrawn` record naming why, in the transaction
that ends the run. So no inbox, badge or `/api/approvals` keeps an approval nobody can decide.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any

from django.db import connection, transaction
from django.db.models import F, Q

from runs import ledger_chain
from runs.approvals.permissions import global_starter_sql
from runs.engine import bound, clock, history
from runs.engine.dispatch import NOTIFY_IF_IDLE_EXPR, TASK_CTE_SQL, enqueue, task_params
from runs.ledger import record_id
from runs.ledger_chain import link_after
from runs.models import ENDED_STATUSES, Approval, ApprovalStatus, LedgerKind, LedgerRecord, Run, RunStatus
from runs.telemetry import metrics

UNFINISHED = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING)

# Who withdraws the approvals of a run that ended: the runtime, not a person. Not a username
# (Django's usernames take no colon), so it can never be mistaken for someone who acted.
RUNTIME_ACTOR = "sanoma:runtime"
# Why, in the approval's note and its `approval.withdrawn` record.
ENDED_BECAUSE = {
    RunStatus.FINISHED: "its run finished",
    RunStatus.FAILED: "its run failed",
    RunStatus.CANCELLED: "its run was cancelled",
}


class LeaseCheck(StrEnum):
    """Why a guarded write by a lease holder matched no row."""

    CANCELLED = "cancelled"  # the run was cancelled while this worker held it
    LOST = "lost"  # another worker holds it now, or the row is gone


_vendor: str | None = None


def one_statement() -> bool:
    """Whether the database takes the one-statement forms below (PostgreSQL)."""
    global _vendor
    if _vendor is None:  # the default database's backend, fixed by the settings: asked once
        _vendor = connection.vendor
    return _vendor == "postgresql"


def _json(value: object) -> str | None:
    return None if value is None else json.dumps(value)


def execute_returning(sql: str, params: Sequence[Any]) -> bool:
    """Run one data-modifying statement; True when it returned a row."""
    return execute_first_row(sql, params) is not None


def execute_first_row(sql: str, params: Sequence[Any]) -> tuple[str | None, ...] | None:
    """Run one data-modifying statement; the first row it returned (values as text), or None."""
    # One statement is atomic on its own: in autocommit it is one round trip. Inside a caller's
    # transaction a savepoint keeps a refused insert from aborting the caller's work.
    # Its parameters are bound by the server (`runs.engine.bound`): no quoting of each in Python.
    if connection.in_atomic_block:
        with transaction.atomic():
            return bound.first_row(sql, params)
    return bound.first_row(sql, params)


# ---- start ----------------------------------------------------------------------------------

def start(*, run: Run) -> None:
    """Insert a new queued run and enqueue it. Raises IntegrityError when the id is taken.

    Call inside the transaction that also writes its `run.started` record. On PostgreSQL
    `start_in_one_statement` (below) is the same writes, and the starter's checks, as one statement.
    """
    run.status = RunStatus.QUEUED
    run.save(force_insert=True)
    enqueue(run.pk)
    metrics.run_started(run.workflow)  # counted once the transaction commits


# The start as one statement (PostgreSQL): the starter read and allowed, the run inserted (unless
# its id is taken), its `run.started` record (linked by the ledger's trigger, under the new row's
# lock), its task and, when no other task is ready, the NOTIFY: one round trip and one transaction
# in autocommit, where the ORM form is a transaction of about ten (the starter's two reads, a
# savepoint, three inserts, the NOTIFY's SELECT). `who` is a SELECT of one row `(groups)` when the
# starter may start the run, none otherwise: then nothing is written and the statement returns no
# row, as it does when the id is taken.
_START_SQL = """
WITH who AS ({who}),
run AS (
    INSERT INTO runs_run ({columns}) SELECT {values} FROM who
    ON CONFLICT DO NOTHING
    RETURNING id, groups
),
record AS (
    INSERT INTO runs_ledgerrecord (record_id, run_id, seq, v, app, at, actor, workflow, kind, body, "group",
        chain_index, prev_hash, hash)
    SELECT %s, id, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb, %s, %s, %s FROM run
),
task AS ({task})
SELECT groups, {notify} FROM run
"""
_start_sql: dict[bool, str] = {}

# The starter's groups when they are known (a `Principal` already allowed to start it).
_KNOWN_STARTER_SQL = "SELECT %s::jsonb AS groups"


def _start_statement(by_username: bool) -> str:
    sql = _start_sql.get(by_username)
    if sql is None:
        fields = [f for f in Run._meta.concrete_fields if f.attname != "groups"]
        sql = _start_sql[by_username] = _START_SQL.format(
            who=global_starter_sql() if by_username else _KNOWN_STARTER_SQL,
            columns=", ".join(f'"{f.column}"' for f in fields) + ', "groups"',
            values=", ".join(f"%s::{f.cast_db_type(connection)}" for f in fields) + ", who.groups",
            task=TASK_CTE_SQL.format(source="run"), notify=NOTIFY_IF_IDLE_EXPR)
    return sql


def start_in_one_statement(*, run: Run, record: LedgerRecord, groups: Sequence[str] | None,
                           permission_id: int | None = None) -> bool:
    """`start` and its `run.started` record in one statement (PostgreSQL, `enqueues_in_one_statement`).

    With `groups` None the starter is read by the statement: the user named `run.started_by`, who
    must be active and may start any workflow (`permissions.global_starter_sql`, `permission_id`
    the id of `runs.start_workflow`); the run takes their groups. With `groups`, the starter was
    read and allowed by the caller. False, with nothing written, when the starter is not allowed
    that way or the run's id is taken: the caller then starts it the ORM way, which says why.
    Raises IntegrityError (nothing written) on any other conflict, e.g. a record of that id."""
    fields = [f for f in Run._meta.concrete_fields if f.attname != "groups"]
    if groups is None:
        who: list[Any] = [run.started_by, permission_id, permission_id]
    else:
        who = [json.dumps(list(groups))]
    task, notify = task_params(run.pk)
    params = [*who, *(f.get_db_prep_save(getattr(run, f.attname), connection) for f in fields),
              *record_params(record), *task, *notify]
    sql = _start_statement(groups is None)
    if connection.in_atomic_block:  # a refused insert must not abort the caller's transaction
        with transaction.atomic():
            row = _fetch_one(sql, params)
    else:
        row = _fetch_one(sql, params)
    if row is None:
        return False
    run.groups = json.loads(row[0]) if isinstance(row[0], str) else row[0]
    run._state.adding, run._state.db = False, connection.alias
    metrics.run_started(run.workflow)  # counted once the transaction commits (at once in autocommit)
    return True


def _fetch_one(sql: str, params: Sequence[Any]) -> Sequence[Any] | None:
    # Prepared once per connection and bound by the server (`runs.engine.bound`), as a step's checkpoint is.
    found = bound.rows(sql, params)
    return found[0] if found else None


# ---- claim ----------------------------------------------------------------------------------

# The run's columns in its model's field order: the claim returns them, read into a `Run` as a
# query's row is (`Model.from_db`, each field's converter), without a raw queryset's per-row
# look at the cursor's description (most of a run's own CPU when it was `Run.objects.raw`).
_RUN_FIELDS = Run._meta.concrete_fields
_CLAIM_SQL = f"""
UPDATE runs_run SET status = %s, lease_owner = %s, lease_until = %s, waiting_for = '', wake_at = NULL, updated_at = %s
WHERE id = %s AND app_version = ANY(%s) AND status IN (%s, %s) AND (lease_until IS NULL OR lease_until < %s)
RETURNING {", ".join(f'"{f.column}"' for f in _RUN_FIELDS)}
"""


def _run_from_row(row: Sequence[Any]) -> Run:
    values = [value if value is None or not hasattr(field, "from_db_value")
              else field.from_db_value(value, None, connection)  # JSON columns come back as text
              for field, value in zip(_RUN_FIELDS, row, strict=True)]
    return Run.from_db(connection.alias, [f.attname for f in _RUN_FIELDS], values)


def claim(*, run_id: str, worker_id: str, versions: Sequence[str], now: datetime,
          lease_until: datetime) -> Run | None:
    """queued (or running with an expired lease) -> running, held by `worker_id`, when the run's
    version is one of `versions` (the worker's workflow versions); the run, or None.

    On PostgreSQL the claimed run comes with the history an advance replays (its current
    generation's steps, `runs.engine.history.load`), read in the claim's transaction: one
    transaction instead of two. It is read by a second statement, after the claim holds the run
    row's lock: every step write holds that lock until it commits (the ledger's chain trigger takes
    it, and a write without a record renews the lease), so a step an earlier holder was still
    writing when the claim waited for the lock is read too, as it was when the load came after the
    claim."""
    if one_statement():  # the claim returns the row: no read of it after
        with transaction.atomic():
            # Prepared once per connection and bound by the server, as a step's checkpoint is.
            found = bound.rows(_CLAIM_SQL, [RunStatus.RUNNING, worker_id, lease_until, now, run_id, list(versions),
                                            RunStatus.QUEUED, RunStatus.RUNNING, now])
            if not found:
                return None
            run = _run_from_row(found[0])
            run._claimed_history, link = history.load_linked(run)  # type: ignore[attr-defined]  # see claimed_history
            # The run's last record as read under the claim's lock, and whether this process had
            # linked records any other way by then (`ledger_chain.linked_elsewhere`): see claimed_link.
            run._claimed_link = None if link is None else (link, ledger_chain.linked_elsewhere)  # type: ignore[attr-defined]
        return run
    updated = (
        Run.objects.filter(pk=run_id, app_version__in=list(versions), status__in=(RunStatus.QUEUED, RunStatus.RUNNING))
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .update(status=RunStatus.RUNNING, lease_owner=worker_id, lease_until=lease_until, waiting_for="",
                wake_at=None, updated_at=now)
    )
    return Run.objects.get(pk=run_id) if updated else None


def claimed_link(run: Run) -> tuple[tuple[int, str], int] | None:
    """The run's last ledger record's link as the claim read it, with `ledger_chain.linked_elsewhere`
    then; None when the claim read none (SQLite, or a run not from `claim`). Handed over once."""
    claimed = getattr(run, "_claimed_link", None)
    if claimed is not None:
        run._claimed_link = None  # type: ignore[attr-defined]
    return claimed


def claimed_history(run: Run) -> history.History | None:
    """The history the claim read with `run`, or None when it read none (SQLite, or a run not from
    `claim`): `history.load` hands it over instead of reading again."""
    return getattr(run, "_claimed_history", None)


# ---- holding the lease ----------------------------------------------------------------------

# The lease part of a step's one-statement checkpoint (see `runs.engine.fastpath`): either renew
# the lease, or, while it is fresh, only check it (no write to the run row and its indexes). A
# lease that has not expired cannot be claimed by another worker, so the check is enough.
# Either takes the run row's lock (the check FOR NO KEY UPDATE, as the ledger's link trigger does),
# so the record the statement inserts is its run's next: a writer of the same run's chain waits
# for this one to commit, then reads its record as the last (`runs.ledger`).
LEASE_RENEW_SQL = """
    UPDATE runs_run SET lease_until = %s, updated_at = %s
    WHERE id = %s AND lease_owner = %s AND status = %s
    RETURNING id
"""
LEASE_CHECK_SQL = """
    SELECT id FROM runs_run
    WHERE lease_until > %s AND id = %s AND lease_owner = %s AND status = %s
    FOR NO KEY UPDATE
"""


def lease_params(*, run_id: str, worker_id: str, now: datetime, lease_until: datetime, renew: bool) -> list[Any]:
    """The parameters of LEASE_RENEW_SQL (renew) or LEASE_CHECK_SQL, in order."""
    head = [lease_until, now] if renew else [now]
    return [*head, run_id, worker_id, RunStatus.RUNNING]


def renew_lease(*, run_id: str, worker_id: str, now: datetime, lease_until: datetime) -> bool:
    """running, held by `worker_id` -> the same, with a later lease; False when no longer held."""
    return bool(
        Run.objects.filter(pk=run_id, lease_owner=worker_id, status=RunStatus.RUNNING).update(
            lease_until=lease_until, updated_at=now)
    )


def keep_alive(*, run_id: str, worker_id: str, now: datetime, lease_until: datetime) -> None:
    """Extend the lease of a call in flight (the heartbeat); the next step's write checks the status."""
    Run.objects.filter(pk=run_id, lease_owner=worker_id).update(lease_until=lease_until, updated_at=now)


def lease_check(*, run_id: str, worker_id: str) -> LeaseCheck:
    """After a guarded write matched nothing: was the run cancelled under this worker, or lost?"""
    row = Run.objects.filter(pk=run_id).values("status", "lease_owner").first()
    if row and row["lease_owner"] == worker_id and row["status"] == RunStatus.CANCELLED:
        return LeaseCheck.CANCELLED
    return LeaseCheck.LOST


def mark_has_approvals(*, run_id: str) -> None:
    """Not a status change: the run asked its first approval, so later advances load approvals."""
    Run.objects.filter(pk=run_id).update(has_approvals=True)


def mark_has_retries(*, run_id: str) -> None:
    """Not a status change: the run recorded its first failed attempt, so later advances load them."""
    Run.objects.filter(pk=run_id).update(has_retries=True)


# ---- suspend, hand back ---------------------------------------------------------------------

def suspend(*, run_id: str, worker_id: str, signal_gen: int, waiting_for: str, wake_at: datetime | None,
            now: datetime) -> bool:
    """running -> waiting, releasing the lease; False when a signal arrived since `signal_gen`
    was read (a decision or message to look at now) or the lease is no longer held."""
    return bool(
        Run.objects.filter(pk=run_id, lease_owner=worker_id, status=RunStatus.RUNNING, signal_gen=signal_gen).update(
            status=RunStatus.WAITING, waiting_for=waiting_for, wake_at=wake_at, lease_owner="", lease_until=None,
            updated_at=now)
    )


def hand_back(*, run_id: str, worker_id: str, now: datetime) -> bool:
    """running -> queued and enqueued again (the segment ran long, or a signal arrived)."""
    with transaction.atomic(savepoint=False):
        requeued = Run.objects.filter(pk=run_id, lease_owner=worker_id, status=RunStatus.RUNNING).update(
            status=RunStatus.QUEUED, lease_owner="", lease_until=None, queued_at=now, updated_at=now)
        if requeued:
            enqueue(run_id)
    return bool(requeued)


# ---- park (a paused workflow) ---------------------------------------------------------------

def park(*, run_id: str, worker_id: str, waiting_for: str, now: datetime) -> bool:
    """running (just claimed, nothing done yet) -> queued with no task: its workflow is paused.
    `waiting_for` names the pause; the sweep does not resend it, and an unpause enqueues it."""
    return bool(
        Run.objects.filter(pk=run_id, lease_owner=worker_id, status=RunStatus.RUNNING).update(
            status=RunStatus.QUEUED, lease_owner="", lease_until=None, waiting_for=waiting_for, updated_at=now)
    )


def unpark(*, waiting_for: str, now: datetime) -> int:
    """Every run parked under `waiting_for` -> queued now, enqueued; how many."""
    with transaction.atomic(savepoint=False):
        parked = list(Run.objects.select_for_update().filter(status=RunStatus.QUEUED, waiting_for=waiting_for)
                      .values_list("pk", flat=True))
        Run.objects.filter(pk__in=parked).update(waiting_for="", queued_at=now, updated_at=now)
        for run_id in parked:
            enqueue(run_id)
    return len(parked)


def wake_held(*, waiting_for: str, now: datetime) -> int:
    """Every run waiting under `waiting_for` (held by a pause just lifted) -> queued, enqueued."""
    held = list(Run.objects.filter(status=RunStatus.WAITING, waiting_for=waiting_for).values_list("pk", flat=True))
    return sum(wake(run_id=run_id, now=now) for run_id in held)


# ---- wake -----------------------------------------------------------------------------------

def wake(*, run_id: str, now: datetime) -> bool:
    """waiting -> queued now, enqueued (a decision, a withdrawal). A run that is not waiting gets
    its signal bumped instead, so an advance about to suspend it looks again. True when woken."""
    with transaction.atomic(savepoint=False):
        woken = Run.objects.filter(pk=run_id, status=RunStatus.WAITING).update(
            status=RunStatus.QUEUED, wake_at=None, waiting_for="", queued_at=now, updated_at=now,
            signal_gen=F("signal_gen") + 1)
        if woken:
            enqueue(run_id)
            return True
        Run.objects.filter(pk=run_id).update(signal_gen=F("signal_gen") + 1, updated_at=now)
    return False


def wake_parent(*, run_id: str, now: datetime) -> bool:
    """A child of `run_id` ended: waiting for a child run -> queued now, enqueued. A parent that
    waits for something else reads the child's end when it reaches its `ctx.wait_run`; a running
    one gets its signal bumped, so an advance about to suspend it looks again."""
    with transaction.atomic(savepoint=False):
        woken = Run.objects.filter(pk=run_id, status=RunStatus.WAITING, waiting_for="run").update(
            status=RunStatus.QUEUED, wake_at=None, waiting_for="", queued_at=now, updated_at=now,
            signal_gen=F("signal_gen") + 1)
        if woken:
            enqueue(run_id)
            return True
        Run.objects.filter(pk=run_id, status__in=(RunStatus.QUEUED, RunStatus.RUNNING)).update(
            signal_gen=F("signal_gen") + 1, updated_at=now)
    return False


def wake_due(*, run_id: str, now: datetime) -> bool:
    """waiting with a deadline that has passed -> queued, enqueued."""
    with transaction.atomic(savepoint=False):
        woken = Run.objects.filter(pk=run_id, status=RunStatus.WAITING, wake_at__lte=now).update(
            status=RunStatus.QUEUED, wake_at=None, waiting_for="", queued_at=now, updated_at=now)
        if woken:
            enqueue(run_id)
    return bool(woken)


def due_sleepers(*, versions: Sequence[str], now: datetime, limit: int) -> list[str]:
    """Ids of the waiting runs of `versions` whose deadline has passed, earliest first."""
    return list(
        Run.objects.filter(status=RunStatus.WAITING, app_version__in=list(versions), wake_at__lte=now)
        .order_by("wake_at").values_list("pk", flat=True)[:limit]
    )


def wake_due_sleepers(*, versions: Sequence[str], now: datetime, limit: int) -> int:
    """Wake every due sleeper of `versions`, each in its own transaction; how many were woken."""
    return sum(wake_due(run_id=run_id, now=now) for run_id in due_sleepers(versions=versions, now=now, limit=limit))


# ---- recovery -------------------------------------------------------------------------------

def take_over(*, run_id: str, owner: str, now: datetime) -> bool:
    """running under a lease that expired -> queued, enqueued (its worker died or hung)."""
    with transaction.atomic(savepoint=False):
        taken = Run.objects.filter(pk=run_id, status=RunStatus.RUNNING, lease_owner=owner, lease_until__lt=now).update(
            status=RunStatus.QUEUED, lease_owner="", lease_until=None, queued_at=now, updated_at=now)
        if taken:
            enqueue(run_id)
    return bool(taken)


def resend(*, run_id: str, queued_at: datetime, now: datetime) -> bool:
    """queued since `queued_at` with its task lost -> queued now, enqueued again."""
    with transaction.atomic(savepoint=False):
        resent = Run.objects.filter(pk=run_id, status=RunStatus.QUEUED, queued_at=queued_at).update(queued_at=now)
        if resent:
            enqueue(run_id)
    return bool(resent)


# ---- cancel ---------------------------------------------------------------------------------

def cancel(*, run: Run, now: datetime, record: LedgerRecord) -> bool:
    """queued, running or waiting -> cancelled, with its pending approvals withdrawn and its
    `run.cancelled` record (the last word) written in the same transaction. The lease owner is
    left in place: see the handshake in this module's docstring. False, with nothing written,
    when the run had already ended."""
    with transaction.atomic():
        cancelled = Run.objects.filter(pk=run.pk).exclude(status__in=ENDED_STATUSES).update(
            status=RunStatus.CANCELLED, ended_at=now, updated_at=now, wake_at=None, waiting_for="")
        if not cancelled:
            return False
        withdraw_pending(run_id=run.pk, workflow=run.workflow, app=record.app, status=RunStatus.CANCELLED, now=now,
                         at=record.at)
        record.save(force_insert=True)
        metrics.run_ended(run.workflow, RunStatus.CANCELLED.value, after_commit=True)
    return True


# ---- the approvals of a run that ended --------------------------------------------------------

def withdraw_pending(*, run_id: str, workflow: str, app: str, status: RunStatus, now: datetime,
                     at: int | None = None) -> list[str]:
    """The run ended with `status`: withdraw each approval still pending, as the runtime, each
    with its `approval.withdrawn` record naming why. Call in the transaction that ends the run.
    An approval decided or withdrawn meanwhile keeps that (the update names the state it leaves).
    `at`: the closing record's moment, so the withdrawals read just before the end. The ids withdrawn."""
    because = ENDED_BECAUSE[status]
    withdrawn = []
    for approval in Approval.objects.filter(run_id=run_id, status=ApprovalStatus.PENDING).order_by("seq"):
        if not Approval.objects.filter(pk=approval.pk, status=ApprovalStatus.PENDING).update(
                status=ApprovalStatus.WITHDRAWN, decided_by=RUNTIME_ACTOR, decided_at=now, note=because):
            continue
        # The approval was pending until now, so no withdrawal of it is recorded yet: a plain insert.
        LedgerRecord(
            record_id=record_id(run_id, LedgerKind.APPROVAL_WITHDRAWN, approval.approval_id), run_id=run_id,
            seq=approval.seq, app=app, at=clock.now_ms() if at is None else at, actor=RUNTIME_ACTOR, workflow=workflow,
            kind=LedgerKind.APPROVAL_WITHDRAWN,
            body={"approval": approval.approval_id, "by": RUNTIME_ACTOR, "reason": because, "run_status": status},
        ).save(force_insert=True)
        withdrawn.append(approval.approval_id)
    return withdrawn


# ---- end ------------------------------------------------------------------------------------

_END_SQL = """
WITH ended AS (
    UPDATE runs_run SET status = %s, result = %s::jsonb, error = %s::jsonb, lease_owner = '', lease_until = NULL,
        updated_at = %s, ended_at = %s
    WHERE id = %s AND lease_owner = %s AND status = %s
    RETURNING id
)
INSERT INTO runs_ledgerrecord (record_id, run_id, seq, v, app, at, actor, workflow, kind, body, "group",
    chain_index, prev_hash, hash)
SELECT %s, id, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb, %s, %s, %s FROM ended
RETURNING id
"""


# The run's end as the head of a one-statement checkpoint (`runs.engine.fastpath.write_step_with_end`):
# the end's own lease check (held by this worker, running), then the step and records after it.
END_CTE_SQL = """
    UPDATE runs_run SET status = %s, result = %s::jsonb, error = %s::jsonb, lease_owner = '', lease_until = NULL,
        updated_at = %s, ended_at = %s
    WHERE id = %s AND lease_owner = %s AND status = %s
    RETURNING id
"""


def end_params(*, run_id: str, worker_id: str, status: RunStatus, result: Any, error: Any,
               now: datetime) -> list[Any]:
    """The parameters of END_CTE_SQL, in order (a run ends finished or failed)."""
    if status not in (RunStatus.FINISHED, RunStatus.FAILED):
        raise ValueError(f"a run ends finished or failed, not {status}")
    return [status, _json(result), _json(error), now, now, run_id, worker_id, RunStatus.RUNNING]


def ends_in_one_statement(*, parent_id: str | None, has_approvals: bool) -> bool:
    """Whether a run's end is one statement (`end`): on PostgreSQL, with no parent to wake and no
    approvals to withdraw."""
    return one_statement() and parent_id is None and not has_approvals


def end(*, run_id: str, worker_id: str, status: RunStatus, result: Any, error: Any, now: datetime,
        record: LedgerRecord, parent_id: str | None = None, has_approvals: bool = True) -> bool:
    """running, held by `worker_id` -> finished or failed, with its closing record written in the
    same transaction; False when this worker no longer holds a running run. A child run's parent
    is woken in that transaction too (`wake_parent`), so no end goes unnoticed, and the run's
    pending approvals are withdrawn (`withdraw_pending`). `has_approvals=False` (the run never
    asked one: `Run.has_approvals`) spares that look."""
    if status not in (RunStatus.FINISHED, RunStatus.FAILED):
        raise ValueError(f"a run ends finished or failed, not {status}")
    if parent_id is None and not has_approvals:
        return _end(run_id=run_id, worker_id=worker_id, status=status, result=result, error=error, now=now,
                    record=record, has_approvals=False)
    with transaction.atomic():
        ended = _end(run_id=run_id, worker_id=worker_id, status=status, result=result, error=error, now=now,
                     record=record, has_approvals=has_approvals)
        if ended and parent_id is not None:
            wake_parent(run_id=parent_id, now=now)
    return ended


def _end(*, run_id: str, worker_id: str, status: RunStatus, result: Any, error: Any, now: datetime,
         record: LedgerRecord, has_approvals: bool) -> bool:
    if one_statement() and not has_approvals:
        return execute_returning(_END_SQL, [
            status, _json(result), _json(error), now, now, run_id, worker_id, RunStatus.RUNNING,
            *record_params(record),
        ])
    with transaction.atomic():
        ended = Run.objects.filter(pk=run_id, lease_owner=worker_id, status=RunStatus.RUNNING).update(
            status=status, result=result, error=error, lease_owner="", lease_until=None, updated_at=now, ended_at=now)
        if not ended:
            return False
        if has_approvals:  # before the closing record, which stays the run's last word
            withdraw_pending(run_id=run_id, workflow=record.workflow, app=record.app, status=status, now=now,
                             at=record.at)
        # Only the lease holder ends a run, once: its closing record cannot exist yet.
        record.save(force_insert=True)
    return True


def record_params(record: LedgerRecord, after: tuple[int, str] | None = None) -> list[Any]:
    """A ledger record's columns in the order the one-statement inserts list them. Linked here
    right after `after` (its run's last record, (chain_index, hash)) when it is given; otherwise
    `hash` carries the content digest, for the insert's trigger to link (see `runs.ledger`)."""
    record.body_text = None  # type: ignore[attr-defined]  # set by the digest when its JSON of the body serves
    if after is None:  # the one-statement forms are PostgreSQL's: no need to ask the connection's vendor
        ledger_chain.for_trigger(record)
    else:
        link_after(record, after)
    body = record.body_text  # type: ignore[attr-defined]
    return [record.record_id, record.seq, record.v, record.app, record.at, record.actor, record.workflow,
            record.kind, _json(record.body) if body is None else body, _json(record.group), record.chain_index,
            record.prev_hash, record.hash]


# ---- stamp ----------------------------------------------------------------------------------

def stamp(*, run_id: str, from_version: str, to_version: str, now: datetime) -> bool:
    """An unfinished run of `from_version` -> the same state on `to_version` (after a deploy)."""
    return bool(
        Run.objects.filter(pk=run_id, app_version=from_version, status__in=UNFINISHED).update(
            app_version=to_version, updated_at=now)
    )
