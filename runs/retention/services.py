"""Exporting and removing ended runs past their keep, batch by batch (see `runs.retention`).

Each batch is the oldest due runs, by when they ended: read, written to their days' export files,
read back and verified, then removed in one short transaction of its own that first checks each
run's chain is still the one exported. The batch's size follows how long its removal took, so no
transaction holds its locks for long, and other work goes on between batches.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connections, transaction
from django.db.models import Count, Exists, Max, Min, OuterRef, Q
from django.db.models.functions import TruncDate

from runs.config.resolution import ResolvedConfig
from runs.engine import clock
from runs.ledger_chain import CONTENT_FIELDS
from runs.models import (
    ENDED_STATUSES,
    Approval,
    ApprovalGroupObjectPermission,
    ApprovalUserObjectPermission,
    DecisionMessage,
    LedgerRecord,
    Run,
    RunGroupObjectPermission,
    RunMessage,
    RunTag,
    RunUserObjectPermission,
    Step,
)
from runs.retention.export import DayFiles, Head, line
from runs.retention.models import PrunedRun

MIN_BATCH, MAX_BATCH = 10, 2000


class RetentionError(Exception):
    """Retention cannot go on; nothing of the batch it names was removed."""


@dataclass(frozen=True)
class Rules:
    """How long ended runs are kept: per workflow, and for every other workflow (None: forever)."""

    per_workflow: Mapping[str, timedelta]
    default: timedelta | None

    @classmethod
    def of(cls, config: ResolvedConfig | None, *, default: timedelta | None = None,
           use_site_default: bool = True) -> Rules:
        if default is None and use_site_default and settings.SANOMA_KEEP_ENDED_RUNS_DAYS is not None:
            default = timedelta(days=settings.SANOMA_KEEP_ENDED_RUNS_DAYS)
        workflows = config.workflows.values() if config is not None else ()
        return cls({w.name: w.keep for w in workflows if w.keep is not None}, default)

    @property
    def keeps_everything(self) -> bool:
        return not self.per_workflow and self.default is None

    def due(self, now: datetime) -> Q:
        """The ended runs past their keep at `now`."""
        due = Q(pk__in=[])
        for workflow, keep in self.per_workflow.items():
            due |= Q(workflow=workflow, ended_at__lt=now - keep)
        if self.default is not None:
            due |= Q(ended_at__lt=now - self.default) & ~Q(workflow__in=list(self.per_workflow))
        return Q(status__in=ENDED_STATUSES, ended_at__isnull=False) & due

    def describe(self, now: datetime) -> list[str]:
        lines = [f"{workflow}: kept {_days(keep)} (ended before {(now - keep):%Y-%m-%d %H:%M} UTC)"
                 for workflow, keep in sorted(self.per_workflow.items())]
        if self.default is None:
            lines.append("every other workflow: kept forever (SANOMA_KEEP_ENDED_RUNS_DAYS is unset)")
        else:
            lines.append(f"every other workflow: kept {_days(self.default)} "
                         f"(ended before {(now - self.default):%Y-%m-%d %H:%M} UTC)")
        return lines


def _days(keep: timedelta) -> str:
    days = keep / timedelta(days=1)
    return f"{days:g} days" if days >= 1 else f"{keep.total_seconds():g} seconds"


def due_runs(rules: Rules, *, now: datetime, using: str = "default") -> Any:
    """Due runs that no remaining run names as its parent (a parent goes after its children)."""
    runs = Run.objects.using(using)
    return (runs.filter(rules.due(now))
            .exclude(Exists(runs.filter(parent_id=OuterRef("pk"))))
            .order_by("ended_at", "id"))


@dataclass(frozen=True)
class Batch:
    number: int
    runs: int
    steps: int
    records: int
    files: tuple[str, ...]
    seconds: float  # the whole batch: export, its check, removal
    remove_seconds: float  # the removal's transaction alone
    skipped: tuple[str, ...] = ()


@dataclass
class Done:
    runs: int = 0
    steps: int = 0
    records: int = 0
    batches: list[Batch] = field(default_factory=list)
    files: set[str] = field(default_factory=set)
    skipped: list[str] = field(default_factory=list)


def check_may_remove(using: str) -> None:
    """PostgreSQL: the role must be allowed to delete ledger records (the tables' owner is; the
    runtime's role is not)."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user, has_table_privilege('runs_ledgerrecord', 'DELETE')")
        user, allowed = cursor.fetchone()
    if not allowed:
        raise RetentionError(f"the database role {user} may not remove ledger records: run retention as the "
                             "tables' owner (set DATABASE_OWNER_URL and run manage.py retention --database owner)")


def prepare_folder(folder: Path) -> Path:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise RetentionError(f"the export folder {folder} cannot be made ({err.strerror})") from err
    if not os_writable(folder):
        raise RetentionError(f"the export folder {folder} is not writable")
    return folder


def os_writable(folder: Path) -> bool:
    return os.access(folder, os.W_OK | os.X_OK)


def _rows(model: Any, using: str, **filters: Any) -> list[dict[str, Any]]:
    return list(model.objects.using(using).filter(**filters).values())


def _export_batch(run_ids: list[str], files: DayFiles,
                  using: str) -> tuple[dict[str, Head], dict[str, str], dict[str, int], set[str]]:
    """Write the runs' lines; their heads as read, the file each went to, each one's steps, and the
    kinds of rows they had."""
    runs = {r["id"]: r for r in _rows(Run, using, id__in=run_ids)}
    children: dict[str, dict[str, list[tuple[str, dict[str, Any]]]]] = {run_id: {} for run_id in runs}

    def add(kind: str, rows: list[dict[str, Any]], run_of: Callable[[dict[str, Any]], str]) -> None:
        for row in rows:
            children[run_of(row)].setdefault(kind, []).append((kind, row))

    steps = _rows(Step, using, run_id__in=run_ids)
    add("step", steps, lambda r: r["run_id"])
    approvals = _rows(Approval, using, run_id__in=run_ids)
    add("approval", approvals, lambda r: r["run_id"])
    approval_run = {a["id"]: a["run_id"] for a in approvals}
    add("decision_message", _rows(DecisionMessage, using, approval_id__in=list(approval_run)),
        lambda r: approval_run[r["approval_id"]])
    add("message", _rows(RunMessage, using, run_id__in=run_ids), lambda r: r["run_id"])
    add("tag", _rows(RunTag, using, run_id__in=run_ids), lambda r: r["run_id"])
    records: dict[str, list[dict[str, Any]]] = {run_id: [] for run_id in runs}
    for record in (LedgerRecord.objects.using(using).filter(run_id__in=run_ids).order_by("run_id", "chain_index")
                   .values(*CONTENT_FIELDS, "chain_index", "prev_hash", "hash")):
        records[record["run_id"]].append(record)
    heads: dict[str, Head] = {}
    placed: dict[str, str] = {}
    for run_id, run in runs.items():
        chain = records[run_id]
        head = Head(run_id, len(chain), chain[-1]["hash"] if chain else "")
        parts = [line("run", run_id, run=run)]
        for kind in ("step", "approval", "decision_message", "message", "tag"):
            parts.extend(line(k, run_id, row=row) for k, row in children[run_id].get(kind, []))
        parts.extend(line("ledger", run_id, record=record) for record in chain)
        parts.append(line("head", run_id, records=head.records, hash=head.hash))
        heads[run_id] = head
        placed[run_id] = files.write(run["ended_at"].date(), b"".join(parts))
    has = {kind for rows in children.values() for kind in rows}
    return heads, placed, {run_id: len(children[run_id].get("step", [])) for run_id in runs}, has


def _live_heads(run_ids: list[str], using: str) -> dict[str, Head]:
    chains: dict[str, list[str]] = {run_id: [] for run_id in run_ids}
    for run_id, hash_ in (LedgerRecord.objects.using(using).filter(run_id__in=run_ids)
                          .order_by("run_id", "chain_index").values_list("run_id", "hash")):
        chains[run_id].append(hash_)
    return {run_id: Head(run_id, len(h), h[-1] if h else "") for run_id, h in chains.items()}


def _removals(run_ids: list[str], has: set[str], using: str) -> list[tuple[Any, Any]]:
    """(model, queryset) for each table holding rows of the runs, in the order they go; `has` names
    the kinds of rows the export found (approvals, decision messages, messages, tags): tables with
    none of theirs are left alone. The ledger and the runs themselves come after these."""
    approvals = Approval.objects.using(using).filter(run_id__in=run_ids).values("id")
    removals: list[tuple[Any, dict[str, Any]]] = []
    if "approval" in has:
        removals += [(ApprovalUserObjectPermission, {"content_object_id__in": approvals}),
                     (ApprovalGroupObjectPermission, {"content_object_id__in": approvals})]
    if "decision_message" in has:
        removals.append((DecisionMessage, {"approval_id__in": approvals}))
    if "approval" in has:
        removals.append((Approval, {"run_id__in": run_ids}))
    if "message" in has:
        removals.append((RunMessage, {"run_id__in": run_ids}))
    if "tag" in has:
        removals.append((RunTag, {"run_id__in": run_ids}))
    removals += [(RunUserObjectPermission, {"content_object_id__in": run_ids}),
                 (RunGroupObjectPermission, {"content_object_id__in": run_ids}),
                 (Step, {"run_id__in": run_ids})]
    return [(model, model.objects.using(using).filter(**filters)) for model, filters in removals]


def _remove(run_ids: list[str], has: set[str], using: str) -> None:
    """Remove the runs and every row of theirs. The ledger's records go by its one delete path: its
    trigger lets them through because their heads were just recorded in `runs_prunedrun`.

    PostgreSQL: one statement (each table's DELETE a step of its WITH; the foreign keys are checked
    at commit). Elsewhere: a statement per table."""
    removals = _removals(run_ids, has, using)
    connection = connections[using]
    if connection.vendor == "postgresql":
        steps, params = [], []
        for number, (model, queryset) in enumerate(removals):
            where, where_params = _where(queryset, connection)
            steps.append(f"d{number} AS (DELETE FROM {model._meta.db_table} WHERE {where})")
            params.extend(where_params)
        steps.append("ledger AS (DELETE FROM runs_ledgerrecord WHERE run_id = ANY(%s))")
        with connection.cursor() as cursor:
            cursor.execute(f"WITH {', '.join(steps)} DELETE FROM {Run._meta.db_table} WHERE id = ANY(%s)",
                           [*params, run_ids, run_ids])
        return
    for _model, queryset in removals:
        queryset._raw_delete(using)
    marks = ", ".join(["%s"] * len(run_ids))
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM runs_ledgerrecord WHERE run_id IN ({marks})", run_ids)
    Run.objects.using(using).filter(id__in=run_ids)._raw_delete(using)


def _where(queryset: Any, connection: Any) -> tuple[str, list[Any]]:
    """The WHERE clause of a one-table queryset's SELECT, and its parameters."""
    query = queryset.query.clone()
    compiler = query.get_compiler(connection=connection)
    where, params = compiler.compile(query.where)
    return where, list(params)


def prune_batch(*, run_ids: list[str], folder: Path, using: str = "default", number: int = 1) -> Batch:
    """Export the runs to `folder`, verify the export, and remove them in one transaction."""
    started = time.monotonic()
    files = DayFiles(folder)
    try:
        heads, placed, steps, has = _export_batch(run_ids, files, using)
        written = files.verify()
        if written.problems:
            raise RetentionError("the export did not verify after it was written, so nothing was removed: "
                                 + "; ".join(written.problems[:5]))
        kept: list[str] = []
        removing = time.monotonic()
        with transaction.atomic(using=using):
            locked = (Run.objects.using(using).select_for_update().filter(id__in=list(heads), status__in=ENDED_STATUSES)
                      .values("id", "workflow", "status", "ended_at"))
            runs = {r["id"]: r for r in locked}
            live = _live_heads(sorted(runs), using)
            gone = [r for r in sorted(runs) if live[r] == heads[r] == written.heads.get(r)]
            kept = sorted(set(heads) - set(gone))
            now = clock.now()
            PrunedRun.objects.using(using).bulk_create([
                PrunedRun(run_id=r, workflow=runs[r]["workflow"], status=runs[r]["status"],
                          ended_at=runs[r]["ended_at"] or now, records=heads[r].records, head=heads[r].hash,
                          export_file=placed[r], pruned_at=now) for r in gone])
            if gone:
                _remove(gone, has, using)
        removed = time.monotonic() - removing
    except BaseException:
        files.discard()
        raise
    files.close()
    return Batch(number=number, runs=len(gone), steps=sum(steps[r] for r in gone),
                 records=sum(heads[r].records for r in gone), files=tuple(sorted({placed[r] for r in gone})),
                 seconds=time.monotonic() - started, remove_seconds=removed, skipped=tuple(kept))


def run_retention(
    *,
    rules: Rules,
    folder: Path,
    using: str = "default",
    now: datetime | None = None,
    batch_size: int = 200,
    batch_seconds: float = 1.0,
    pause: float = 0.0,
    limit: int | None = None,
    progress: Callable[[Batch, Done], None] | None = None,
) -> Done:
    """Export and remove every due run, oldest first, in batches; what was done.

    The batch size starts at `batch_size` and halves when a batch's removal (its transaction)
    took longer than `batch_seconds`, doubles when it took under half of it (between 10 and 2,000
    runs)."""
    if batch_size < 1:
        raise RetentionError(f"the batch size must be at least 1; got {batch_size}")
    done = Done()
    if rules.keeps_everything:
        return done
    check_may_remove(using)
    prepare_folder(folder)
    with _one_at_a_time(using):
        return _run(rules=rules, folder=folder, using=using, now=now or clock.now(), size=batch_size,
                    batch_seconds=batch_seconds, pause=pause, limit=limit, progress=progress, done=done)


# Held by the retention running on a PostgreSQL database, so that a second one stops at once.
LOCK_KEY = 0x5A_4E_07_A0


@contextmanager
def _one_at_a_time(using: str) -> Iterator[None]:
    connection = connections[using]
    if connection.vendor != "postgresql":
        yield  # SQLite: one writer at a time anyway
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [LOCK_KEY])
        if not cursor.fetchone()[0]:
            raise RetentionError("another retention is running on this database; nothing was done")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])


def _analyze(using: str, done: int) -> int | None:
    """PostgreSQL: refresh `runs_prunedrun`'s statistics, so that the ledger's delete trigger (whose
    plan its session keeps) looks runs up by its index, not by reading the table; the number of runs
    removed after which to do it again (when the table has about doubled), or None off PostgreSQL."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE runs_prunedrun")
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = 'runs_prunedrun'::regclass")
        rows = max(0, int(cursor.fetchone()[0]))
    return done + max(1000, rows)


def _run(*, rules: Rules, folder: Path, using: str, now: datetime, size: int, batch_seconds: float, pause: float,
         limit: int | None, progress: Callable[[Batch, Done], None] | None, done: Done) -> Done:
    after: tuple[datetime, str] | None = None
    analyzed = _analyze(using, 0)
    while limit is None or done.runs < limit:
        page = due_runs(rules, now=now, using=using)
        if after is not None:
            page = page.filter(Q(ended_at__gt=after[0]) | Q(ended_at=after[0], id__gt=after[1]))
        take = size if limit is None else min(size, limit - done.runs)
        rows = list(page.values_list("ended_at", "id")[:take])
        if not rows:
            break
        after = rows[-1]
        batch = prune_batch(run_ids=[r[1] for r in rows], folder=folder, using=using,
                            number=len(done.batches) + 1)
        done.batches.append(batch)
        done.runs += batch.runs
        done.steps += batch.steps
        done.records += batch.records
        done.files.update(batch.files)
        done.skipped.extend(batch.skipped)
        if progress is not None:
            progress(batch, done)
        if analyzed is not None and done.runs >= analyzed:
            analyzed = _analyze(using, done.runs)
        if batch.remove_seconds > batch_seconds:
            size = max(MIN_BATCH, size // 2)
        elif batch.remove_seconds < batch_seconds / 2:
            size = min(MAX_BATCH, size * 2)
        if pause:
            time.sleep(pause)
    return done


@dataclass(frozen=True)
class Due:
    workflow: str
    runs: int
    oldest: datetime
    newest: datetime


def plan(rules: Rules, *, now: datetime | None = None, using: str = "default") -> list[Due]:
    """What retention would remove now, by workflow (the dry run)."""
    if rules.keeps_everything:
        return []
    now = now or clock.now()
    rows = (Run.objects.using(using).filter(rules.due(now)).order_by().values("workflow")
            .annotate(n=Count("id"), oldest=Min("ended_at"), newest=Max("ended_at")).order_by("workflow"))
    return [Due(r["workflow"], r["n"], r["oldest"], r["newest"]) for r in rows]


def days_of(rules: Rules, *, now: datetime, using: str = "default") -> Iterator[str]:
    """The export files a run now would write to."""
    days = (Run.objects.using(using).filter(rules.due(now)).annotate(day=TruncDate("ended_at"))
            .order_by("day").values_list("day", flat=True).distinct())
    for day in days:
        yield f"runs-{day.isoformat()}.jsonl"
