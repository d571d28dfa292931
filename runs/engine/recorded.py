"""A run's record, as a dry replay reads it: its steps, its approvals, the calls it began.

`load_records` reads the record of many runs in a few queries (one per table per batch), for
proving every parked run at a deploy: of a run that continued as new, the steps of its current
generation only (`runs.engine.history`). `Recorded.as_json` / `Recorded.from_json` are the fixture
format `manage.py replay --export` writes and `--fixtures` proves: a company's CI replays its runs'
records against every edit without their database. Nothing here writes.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import OuterRef, Subquery
from django.db.models.functions import Coalesce

from runs.engine import history
from runs.engine.history import History
from runs.engine.segment import APPROVAL, HOLD
from runs.models import Approval, LedgerKind, LedgerRecord, Run, Step, StepKind

FIXTURE_FORMAT = "sanoma.recorded/1"
# How many runs one batch of reads covers.
BATCH = 500
# The records of calls begun but not settled: a call in doubt, or due another try.
BEGUN_KINDS = (LedgerKind.OP_INTENT, LedgerKind.OP_ATTEMPT_FAILED, LedgerKind.OP_RESOLVED)

# The records a step writes as the body reaches it, so they carry the `ctx.all` group it ran in
# (a decision, a release or a deploy's record is written apart from the body, and says nothing of it).
STEP_KINDS = (LedgerKind.OP_CALLED, LedgerKind.SLEEP_STARTED, LedgerKind.APPROVAL_REQUESTED,
              LedgerKind.MESSAGE_RECEIVED, LedgerKind.CHILD_STARTED, LedgerKind.CHILD_ENDED, LedgerKind.RUN_TAGGED,
              LedgerKind.OP_INTENT, LedgerKind.OP_ATTEMPT_FAILED)

RUN_FIELDS = ("id", "workflow", "app_version", "input", "started_by", "groups", "status", "waiting_for")
STEP_FIELDS = ("seq", "kind", "name", "output", "error", "decision", "attempt", "next_seq")
APPROVAL_FIELDS = ("approval_id", "seq", "title", "approver", "requested_by", "covers", "links", "details", "op",
                   "op_input", "op_seq", "status", "decided_by", "note", "decided_with")
RECORD_FIELDS = ("seq", "kind", "body", "group", "at")


@dataclass
class Recorded:
    """What one run recorded: the run, its steps (seq -> step), its approvals, the ledger records
    of calls it began (in doubt, or due another try), and the `ctx.all` group its records carry
    at each seq (None where they carry none; a seq with no record is not there)."""

    run: Run
    steps: dict[int, Step]
    approvals: list[Approval] = field(default_factory=list)
    records: list[LedgerRecord] = field(default_factory=list)
    groups: dict[int, dict[str, Any] | None] = field(default_factory=dict)

    def generation(self) -> History:
        """What a replay of the run reads: its current generation (after its latest
        `ctx.continue_as_new`, if any), with that generation's input."""
        return history.current(self.run.input, self.steps)

    def pending(self) -> dict[int, tuple[str, str]]:
        """What the run's current generation began at a seq and has no step for (see
        `runs.engine.segment.DrySegment`)."""
        base = self.generation().base
        begun: dict[int, tuple[str, str]] = {}
        for record in self.records:
            if (record.kind in BEGUN_KINDS and record.seq > base and record.seq not in self.steps
                    and record.body.get("op")):
                begun[record.seq] = (StepKind.CALL, record.body["op"])
        for approval in self.approvals:
            if approval.seq <= base:
                continue  # asked before the run continued as new
            if approval.op_seq is not None:
                begun[approval.seq] = (HOLD, approval.op)
                if approval.op_seq not in self.steps:
                    begun[approval.op_seq] = (StepKind.CALL, approval.op)
            else:
                begun[approval.seq] = (APPROVAL, approval.title)
        return begun

    @property
    def frontier(self) -> int:
        """The first seq the run recorded nothing at, nor past it."""
        return max((*self.steps, *self.pending()), default=0) + 1

    # ---- fixtures -----------------------------------------------------------------------------

    def as_json(self) -> dict[str, Any]:
        return {
            "format": FIXTURE_FORMAT,
            "run": {name: getattr(self.run, name) for name in RUN_FIELDS},
            "steps": [{name: getattr(step, name) for name in STEP_FIELDS} for step in self.ordered_steps()],
            "approvals": [{**{name: getattr(a, name) for name in APPROVAL_FIELDS},
                           "decided_at": a.decided_at.isoformat() if a.decided_at else None}
                          for a in sorted(self.approvals, key=lambda a: a.seq)],
            "records": [{name: getattr(r, name) for name in RECORD_FIELDS} for r in self.records],
            "groups": [[seq, group] for seq, group in sorted(self.groups.items())],
        }

    @classmethod
    def from_json(cls, data: Any) -> Recorded:
        """A fixture read back; `ValueError` naming what is wrong with one that is not."""
        if not isinstance(data, dict) or data.get("format") != FIXTURE_FORMAT:
            raise ValueError(f"not a recorded run: its format must be {FIXTURE_FORMAT!r}")
        try:
            run = Run(**{name: data["run"][name] for name in RUN_FIELDS})
            steps = {s["seq"]: Step(run=run, **{name: s[name] for name in STEP_FIELDS}) for s in data["steps"]}
            approvals = [Approval(run=run, decided_at=_moment(a["decided_at"]),
                                  **{name: a[name] for name in APPROVAL_FIELDS}) for a in data["approvals"]]
            records = [LedgerRecord(run_id=run.id, **{name: r[name] for name in RECORD_FIELDS})
                       for r in data["records"]]
            groups = {int(seq): group for seq, group in data["groups"]}
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"a recorded run's field is missing or wrong: {err}") from None
        return cls(run=run, steps=steps, approvals=approvals, records=records, groups=groups)

    def ordered_steps(self) -> list[Step]:
        return [self.steps[seq] for seq in sorted(self.steps)]


def _moment(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def load_records(runs: Iterable[Run]) -> list[Recorded]:
    """The record of each run, read a batch of `BATCH` runs at a time (three queries a batch)."""
    loaded: list[Recorded] = []
    batch: list[Run] = []
    for run in runs:
        batch.append(run)
        if len(batch) == BATCH:
            loaded += _load_batch(batch)
            batch = []
    if batch:
        loaded += _load_batch(batch)
    return loaded


def _load_batch(runs: Sequence[Run]) -> list[Recorded]:
    ids = [run.pk for run in runs]
    steps: dict[str, dict[int, Step]] = {run_id: {} for run_id in ids}
    # Each run's current generation: its latest continue step and those after it (a replay reads no more).
    last = (Step.objects.filter(run_id=OuterRef("run_id"), kind=StepKind.CONTINUE).order_by("-seq")
            .values("seq")[:1])
    for step in Step.objects.filter(run_id__in=ids, seq__gte=Coalesce(Subquery(last), 0)).only("run_id", *STEP_FIELDS):
        steps[step.run_id][step.seq] = step
    approvals: dict[str, list[Approval]] = {run_id: [] for run_id in ids}
    for approval in Approval.objects.filter(run_id__in=ids).order_by("seq"):
        approvals[approval.run_id].append(approval)
    records: dict[str, list[LedgerRecord]] = {run_id: [] for run_id in ids}
    for record in (LedgerRecord.objects.filter(run_id__in=ids, kind__in=BEGUN_KINDS)
                   .only("run_id", *RECORD_FIELDS).order_by("run_id", "seq", "id")):
        records[record.run_id].append(record)
    groups: dict[str, dict[int, dict[str, Any] | None]] = {run_id: {} for run_id in ids}
    # Each seq's group from the records its step wrote: a record with a group wins over one without.
    for run_id, seq, group in (LedgerRecord.objects.filter(run_id__in=ids, kind__in=STEP_KINDS)
                               .values_list("run_id", "seq", "group")):
        if group or seq not in groups[run_id]:
            groups[run_id][seq] = group or None
    return [Recorded(run=run, steps=steps[run.pk], approvals=approvals[run.pk], records=records[run.pk],
                     groups=groups[run.pk]) for run in runs]
