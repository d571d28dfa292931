"""Reads of runs: the client's selectors. Each answers only what its viewer may see."""
from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.db.models import Q, QuerySet

from connectors.errors import InvalidInput, IssueCode, SanomaError, error_from_dict, input_issue
from runs import ledger
from runs.approvals.permissions import (
    Principal,
    check_can_view,
    is_operator,
    principal_of,
    run_not_found,
    visible_runs,
)
from runs.engine.pauses import PAUSED
from runs.errors import RunCode
from runs.limits import RATE_WAIT, SLOT_WAIT
from runs.models import (
    ENDED_STATUSES,
    ApprovalStatus,
    LedgerKind,
    LedgerRecord,
    Pause,
    PauseKind,
    Run,
    RunStatus,
    RunTag,
    Step,
    StepKind,
)

RESULT_POLL_SECONDS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)

# What a run can wait for, as the run list filters it (`waiting_for=`): a person's decision, a
# message, the end of a sleep, a child run, an operator's word on a call in doubt, the unpause of
# what holds it, the next try of a failed call, a rate or concurrency limit's turn.
WAITING_FOR = ("approval", "message", "sleep", "run", "in_doubt", "paused", "retry", "limit")


def visible_run(*, run_id: Any, viewer: str | Principal | None, for_update: bool = False) -> Run:
    """The run if `viewer` may see it, else `run_not_found`: the visibility rule, in one place.

    Every service and selector taking a run id calls this first, before any other check, so a
    caller who may not see a run learns nothing about it (not its status, not its approver).
    `viewer=None` is the runtime itself (the engine, the scenarios), which sees every run.
    `for_update` locks the row for the rest of the caller's transaction.
    """
    runs = Run.objects.select_for_update() if for_update else Run.objects.all()
    run = runs.filter(pk=run_id).first() if isinstance(run_id, str) and run_id else None
    if run is None or (viewer is not None and not check_can_view(principal_of(viewer), run, raise_error=False)):
        raise run_not_found(run_id)
    return run


def get_run(*, run_id: str, viewer: str | Principal | None = None) -> Run | None:
    """The run if `viewer` may see it, else None (see `visible_run`)."""
    try:
        return visible_run(run_id=run_id, viewer=viewer)
    except SanomaError:
        return None


# A list counts the runs that match up to this many past where its page starts, and says "more than"
# beyond: a count that reads every match grows with the runs parked in the list (100,000 waiting runs
# are 100,000 index entries read on every page), this one stops where a person stops counting.
COUNT_BOUND = 10_000


@dataclass(frozen=True)
class Counted:
    """How many match: `n` exactly, or (`exact` false) more than `n`."""

    n: int
    exact: bool = True

    def __str__(self) -> str:
        return f"{self.n:,}" if self.exact else f"more than {self.n:,}"


# The largest LIMIT a query may carry: a signed 64-bit integer.
LARGEST_LIMIT = 2**63 - 1


def bounded_count(runs: QuerySet[Any], *, start: int = 0, bound: int | None = None) -> Counted:
    """How many of `runs` there are, reading at most `start + bound + 1` of them (`bound`:
    COUNT_BOUND when not given): exact up to there, "more than `start + bound`" past it. `start` is
    where the page shown begins, so a page far down a long list still knows whether more follow."""
    # The LIMIT below is `cap + 1` and must stay a signed 64-bit integer (what SQLite and PostgreSQL
    # take): a page starting near 2^63 - 1 would otherwise push it past, and the query fails.
    cap = min(start + (COUNT_BOUND if bound is None else bound), LARGEST_LIMIT - 1)
    found = runs.order_by().values("pk")[: cap + 1].count()
    return Counted(found) if found <= cap else Counted(cap, exact=False)


@dataclass(frozen=True)
class RunPage:
    runs: list[Run]
    total: int  # exact when `total_exact`, else more than `total` match
    offset: int
    limit: int
    total_exact: bool = True

    @property
    def counted(self) -> Counted:
        return Counted(self.total, self.total_exact)


@dataclass(frozen=True)
class RunFilter:
    """What a run list, a bulk rerun and a bulk cancel select runs by (every field optional)."""

    status: str | None = None
    workflow: str | None = None
    started_by: str | None = None
    error_code: str | None = None
    tags: tuple[tuple[str, str], ...] = ()  # each (key, value) must match
    started_after: datetime | None = None
    started_before: datetime | None = None
    waiting_for: str | None = None  # one of WAITING_FOR
    sandbox: bool | None = None  # True: only sandbox runs (runs.sandbox); False: none of them

    @classmethod
    def parse(cls, *, status: Any = None, workflow: Any = None, started_by: Any = None, error_code: Any = None,
              tags: Any = (), started_after: Any = None, started_before: Any = None,
              waiting_for: Any = None, sandbox: bool | None = None) -> RunFilter:
        """A filter from strings as the API and the commands get them; `invalid_input` naming the field."""
        if status is not None and status not in RunStatus.values:
            raise _bad("status", f"status must be one of {', '.join(RunStatus.values)}; got {status!r}")
        if waiting_for is not None and waiting_for not in WAITING_FOR:
            raise _bad("waiting_for", f"waiting_for must be one of {', '.join(WAITING_FOR)}; got {waiting_for!r}")
        return cls(status=status or None, workflow=workflow or None, started_by=started_by or None,
                   error_code=error_code or None, tags=tuple(parse_tag(tag) for tag in tags or ()),
                   started_after=_moment("started_after", started_after),
                   started_before=_moment("started_before", started_before), waiting_for=waiting_for or None,
                   sandbox=sandbox)

    def apply(self, runs: QuerySet[Run]) -> QuerySet[Run]:
        if self.status:
            runs = runs.filter(status=self.status)
        if self.workflow:
            runs = runs.filter(workflow=self.workflow)
        if self.started_by:
            runs = runs.filter(started_by=self.started_by)
        if self.error_code:
            runs = runs.filter(error__code=self.error_code)
        for key, value in self.tags:
            runs = tagged(runs, key, value)
        if self.waiting_for:
            runs = runs_waiting_for(runs, self.waiting_for)
        if self.started_after:
            runs = runs.filter(created_at__gte=self.started_after)
        if self.started_before:
            runs = runs.filter(created_at__lt=self.started_before)
        if self.sandbox is not None:
            runs = runs.filter(sandbox__isnull=not self.sandbox)
        return runs


def parse_tag(tag: Any) -> tuple[str, str]:
    """`order=1001` as ("order", "1001"); `invalid_input` at `tag` for anything else."""
    key, sep, value = tag.partition("=") if isinstance(tag, str) else ("", "", "")
    if not sep or not key or not value:
        raise _bad("tag", f"a tag filter is key=value (e.g. order=1001); got {tag!r}")
    return key, value


def tagged(runs: QuerySet[Run], key: str, value: str) -> QuerySet[Run]:
    """The runs tagged `key=value` (ctx.tag), exactly."""
    return runs.filter(pk__in=RunTag.objects.filter(key=key, value=value).values("run_id"))


def runs_waiting_for(runs: QuerySet[Run], kind: str) -> QuerySet[Run]:
    """The runs waiting for `kind` (one of WAITING_FOR). A run a pause holds waits for the unpause
    whether it was waiting or queued when the pause caught it ("paused <target>")."""
    if kind == PAUSED:
        return runs.filter(waiting_for__startswith=f"{PAUSED} ")
    if kind == "limit":  # "rate limit of stripe", "concurrency limit of stripe.refund.create for account a"
        return runs.filter(Q(waiting_for__startswith=f"{RATE_WAIT} ") | Q(waiting_for__startswith=f"{SLOT_WAIT} "),
                           status=RunStatus.WAITING)
    return runs.filter(status=RunStatus.WAITING, waiting_for=kind)


def _bad(field: str, message: str) -> InvalidInput:
    return InvalidInput(message, data={"issues": [input_issue([field], message, IssueCode.INVALID)]})


def _moment(field: str, value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise _bad(field, f"{field} must be an ISO 8601 date or date-time (e.g. 2026-12-01T09:00+02:00); "
                              f"got {value!r}") from None
    else:
        raise _bad(field, f"{field} must be an ISO 8601 date-time")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)  # a bare date or time is read as UTC
    return moment


def matching_runs(*, viewer: str | Principal | None, where: RunFilter) -> QuerySet[Run]:
    """The runs `viewer` may see that match, newest first."""
    runs = Run.objects.all() if viewer is None else visible_runs(principal_of(viewer))
    return where.apply(runs).order_by("-created_at", "-id")


def list_runs(
    *,
    viewer: str | Principal | None = None,
    status: str | None = None,
    workflow: str | None = None,
    started_by: str | None = None,
    where: RunFilter | None = None,
    limit: int = 20,
    offset: int = 0,
) -> RunPage:
    """Runs newest first, filtered; a viewer sees only the runs they may see. Counted up to
    COUNT_BOUND past the page's start (see `bounded_count`)."""
    if where is None:
        where = RunFilter.parse(status=status, workflow=workflow, started_by=started_by)
    if not isinstance(limit, int) or not 1 <= limit <= 500:
        raise InvalidInput("limit must be a whole number from 1 to 500",
                           data={"issues": [input_issue(["limit"], "out of range", IssueCode.INVALID)]})
    if not isinstance(offset, int) or offset < 0:
        raise InvalidInput("offset must be a whole number from 0",
                           data={"issues": [input_issue(["offset"], "out of range", IssueCode.INVALID)]})
    runs = matching_runs(viewer=viewer, where=where)
    total = bounded_count(runs, start=offset, bound=max(COUNT_BOUND, limit))
    return RunPage(runs=list(runs[offset : offset + limit]), total=total.n, offset=offset, limit=limit,
                   total_exact=total.exact)


def distinct_run_values(column: str) -> list[str]:
    """Every value of an indexed, non-null column of the runs, sorted, each once: read by skipping
    through its index one value at a time (a recursive MIN above the last one), so it costs the
    values there are, not the runs (a DISTINCT reads every run, the parked ones included)."""
    if column not in INDEXED_VALUE_COLUMNS:
        raise ValueError(f"{column} is not an indexed column of the runs")
    table = connection.ops.quote_name(Run._meta.db_table)
    col = connection.ops.quote_name(column)
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH RECURSIVE found(v) AS (SELECT MIN({col}) FROM {table} UNION ALL "
            f"SELECT (SELECT MIN({col}) FROM {table} WHERE {col} > found.v) FROM found WHERE found.v IS NOT NULL) "
            "SELECT v FROM found WHERE v IS NOT NULL")
        return [row[0] for row in cursor.fetchall()]


# The runs' columns `distinct_run_values` may read: indexed (db_index) and never null.
INDEXED_VALUE_COLUMNS = ("workflow", "started_by", "app_version")


def tags_of(run: Run) -> dict[str, str]:
    return dict(run.tags.values_list("key", "value"))


def ledger_of(*, run_id: str, viewer: str | Principal | None = None) -> list[dict[str, Any]]:
    visible_run(run_id=run_id, viewer=viewer)
    return ledger.records_of(run_id)


def result(*, run_id: str, timeout: float = 30.0, viewer: str | Principal | None = None) -> Any:
    """The run's output once it has ended; its error, code kept, if it failed."""
    deadline = time.monotonic() + max(0.0, timeout)
    polls = iter(RESULT_POLL_SECONDS)
    while True:
        run = visible_run(run_id=run_id, viewer=viewer)
        if run.status == RunStatus.FINISHED:
            return run.result
        if run.status == RunStatus.FAILED:
            raise error_from_dict(run.error or {"message": "failed"})
        if run.status == RunStatus.CANCELLED:
            raise SanomaError(f"Run {run_id} was cancelled", code=RunCode.RUN_CANCELLED, data={"run_id": run_id})
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise SanomaError(f"Run {run_id} is still {run.status}", code=RunCode.RUN_RUNNING,
                              data={"run_id": run_id, "status": run.status})
        time.sleep(min(next(polls, 1.0), remaining))


def runs_on_other_versions(*, versions: Collection[str], limit: int = 5) -> tuple[list[Run], int]:
    """Unfinished runs whose version is none of `versions` (a worker's workflow versions): the
    first `limit`, oldest first, and how many there are."""
    others = (Run.objects.exclude(status__in=ENDED_STATUSES).exclude(app_version__in=list(versions))
              .order_by("created_at"))
    return list(others[:limit]), others.count()


def waiting_on(run: Run) -> dict[str, Any] | None:
    """What a waiting run waits for, in detail: the message topic or the child run (from the wait's
    own step), the pending approvals, or the sleep's end; with the deadline when there is one."""
    if run.status != RunStatus.WAITING:
        return None
    until = None if run.wake_at is None else run.wake_at.isoformat()
    detail: dict[str, Any] = {"kind": run.waiting_for, "until": until}
    if run.waiting_for in ("message", "run"):
        kind = StepKind.WAIT if run.waiting_for == "message" else StepKind.RUN_WAIT
        began = Step.objects.filter(run=run, kind=kind).order_by("-seq").values_list("name", flat=True).first()
        detail["topic" if run.waiting_for == "message" else "run_id"] = began
    elif run.waiting_for.startswith(PAUSED + " "):
        detail["kind"] = PAUSED
        detail["target"] = run.waiting_for[len(PAUSED) + 1:]
        pause = (Pause.objects.filter(target=detail["target"], unpaused_at__isnull=True)
                 .exclude(kind=PauseKind.WORKFLOW).first())
        if pause is not None:
            detail["reason"], detail["by"] = pause.reason, pause.paused_by
    elif run.waiting_for == "in_doubt":
        intent = (LedgerRecord.objects.filter(run_id=run.pk, kind=LedgerKind.OP_INTENT).order_by("-seq", "-id")
                  .values("seq", "body").first())
        if intent is not None:
            detail.update(op=intent["body"].get("op"), seq=intent["seq"], attempt=intent["body"].get("attempt"))
    elif run.waiting_for == "approval":
        detail["approvals"] = list(run.approvals.filter(status=ApprovalStatus.PENDING).order_by("seq")
                                   .values("approval_id", "title", "approver"))
    return detail


def made_from(run: Run) -> dict[str, Any] | None:
    """The run this one reruns or forks (`act`: "rerun" or "fork", `run_id`, a fork's `from_step`,
    `by`: who made it), from its `run.started` record; None for a run started afresh."""
    if not run.source_run:
        return None
    body = (LedgerRecord.objects.filter(run_id=run.pk, kind=LedgerKind.RUN_STARTED).order_by("seq", "id")
            .values_list("body", flat=True).first()) or {}
    if body.get("fork_of"):
        return {"act": "fork", "run_id": run.source_run, "from_step": body.get("from_step"), "by": body.get("by")}
    return {"act": "rerun", "run_id": run.source_run, "by": body.get("by")}


def children_of(run: Run) -> list[dict[str, Any]]:
    """The runs this run started (`ctx.start_run`), oldest first: id, workflow, status."""
    return [dict(row) for row in run.children.order_by("created_at", "id").values("id", "workflow", "status")]


def comparable_runs(run: Run, *, viewer: Principal, limit: int) -> list[tuple[str, str]]:
    """(id, status) of the newest other runs of the same workflow `viewer` may see."""
    others = visible_runs(viewer).filter(workflow=run.workflow).exclude(pk=run.pk).order_by("-created_at")
    return list(others.values_list("id", "status")[:limit])


def failed_error_codes() -> list[str]:
    """The codes of the failed runs' errors, sorted, each once."""
    codes = (Run.objects.filter(status=RunStatus.FAILED).exclude(error__code=None).order_by()
             .values_list("error__code", flat=True).distinct())  # no ordering: DISTINCT on the codes alone
    return sorted({c for c in codes if isinstance(c, str)})


def steps_of(run: Run) -> list[Step]:
    """The run's steps, in order."""
    return list(run.steps.order_by("seq"))


def steps_before(run: Run, seq: int) -> int:
    """How many steps the run recorded before `seq`."""
    return run.steps.filter(seq__lt=seq).count()


def run_of(run_id: str) -> Run | None:
    """The run with this id, or None; no visibility check (the caller makes it)."""
    return Run.objects.filter(pk=run_id).first()


def ledger_records(*, run_id: str | None = None, viewer: Principal | None = None) -> QuerySet[LedgerRecord]:
    """Ledger records: of one run (`run_id`), and of the runs `viewer` may see (every record when
    `viewer` is None or an operator)."""
    records = LedgerRecord.objects.all()
    if run_id is not None:
        records = records.filter(run_id=run_id)
    if viewer is not None and not is_operator(viewer):
        records = records.filter(run_id__in=visible_runs(viewer).values("pk"))
    return records
