"""The proof: can a parked run go on on new code?

A run parked on an older version (waiting for a message, a child, an approval or the end of a
sleep; held for an approval; in doubt; queued) is replayed over its own record on the new code,
dry (`runs.engine.segment.DrySegment`): recorded steps answer from the record, and nothing is
written or called. The run **migrates** when the new code reaches the point the run is parked
at by the very steps it recorded, compared by kind and name (`call shop.order.get`,
`wait shipped`, `sleep`, an approval, a patch); it **stays pinned** otherwise, with the sentence
saying why: the first step that differs (`step 4 was call shop.order.refund, now call
shop.order.get`), a workflow the new code lacks, an input its schema no longer takes, code that
fails, ends or waits before the parked point, or a `ctx.all` whose members changed.

An operation's input is not compared: a recorded call answers from its record whatever input
the new code would give it, exactly as every replay does, so changing what a later call sends
(or how a recorded answer is used) is the ordinary edit that migrates. What the run already did
stays as it was done.

A run that ended (`replay --ended`) proves its whole history: the new code replays every step
it recorded.
"""
from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from django.db.models import QuerySet
from pydantic import ValidationError

from connectors.errors import describe_issues, issues_of
from runs.config.resolution import ResolvedConfig
from runs.engine.context import RunContext
from runs.engine.recorded import Recorded, load_records
from runs.engine.segment import DrySegment
from runs.engine.stops import Diverged, ReachedStep, Suspend
from runs.models import ENDED_STATUSES, Run, RunStatus, StepKind

# The states of a run not yet ended: each is parked somewhere a proof can find.
PARKED_STATUSES = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING)


@dataclass(frozen=True)
class Proof:
    """One run's outcome on a tree: it migrates, or stays pinned and why (`step`: the first step
    that differs, or None when no one step does)."""

    run_id: str
    workflow: str
    from_version: str
    to_version: str
    outcome: Literal["migrates", "pinned"]
    reason: str
    steps_replayed: int
    step: int | None

    @property
    def migrates(self) -> bool:
        return self.outcome == "migrates"

    def as_json(self) -> dict[str, Any]:
        """What `manage.py replay --json` prints for the run."""
        return {"run": self.run_id, "workflow": self.workflow, "from": self.from_version, "to": self.to_version,
                "outcome": self.outcome, "reason": self.reason, "steps": self.steps_replayed, "step": self.step}


def version_of(config: ResolvedConfig, workflow: str) -> str:
    """The version a run of `workflow` has on `config`: the workflow's own, or the deploy's."""
    versions = getattr(config, "workflow_versions", None) or {}
    return str(versions.get(workflow) or config.version)


def parked_runs(*, exclude_versions: Collection[str] = ()) -> QuerySet[Run]:
    """The runs not yet ended (queued, running, waiting: held and in doubt among them) whose
    version is not one of `exclude_versions`, oldest first."""
    runs = Run.objects.filter(status__in=PARKED_STATUSES)
    if exclude_versions:
        runs = runs.exclude(app_version__in=list(exclude_versions))
    return runs.order_by("created_at", "id")


def prove(*, run: Run, config: ResolvedConfig) -> Proof:
    """Whether `run` goes on on `config`'s code (see the module). Writes nothing, calls no vendor."""
    return prove_recorded(recorded=load_records([run])[0], config=config)


def prove_runs(*, config: ResolvedConfig, runs: Iterable[Run]) -> list[Proof]:
    """`prove` for many runs, their records read in batches (a few queries per 500 runs)."""
    return [prove_recorded(recorded=recorded, config=config) for recorded in load_records(runs)]


def prove_recorded(*, recorded: Recorded, config: ResolvedConfig) -> Proof:
    """The proof of one run's record (from the database, or a fixture `replay --export` wrote)."""
    run = recorded.run
    to_version = version_of(config, run.workflow)

    def outcome(reason: str = "", *, replayed: int = 0, step: int | None = None) -> Proof:
        return Proof(run_id=run.id, workflow=run.workflow, from_version=run.app_version, to_version=to_version,
                     outcome="pinned" if reason else "migrates", reason=reason, steps_replayed=replayed, step=step)

    definition = config.workflows.get(run.workflow)
    if definition is None:
        return outcome(f"workflow {run.workflow} is not in the new code")
    current = recorded.generation()  # a run that continued as new replays from its latest continue step
    try:
        payload = definition.input.model_validate(current.input)
    except ValidationError as err:
        return outcome(f"the run's input no longer matches {run.workflow}'s schema: {describe_issues(issues_of(err))}")
    pending = recorded.pending()
    frontier = recorded.frontier
    # Where the run is parked: the call it began and has not settled, or past all it recorded.
    parked = min((seq for seq, (kind, _) in pending.items() if kind == StepKind.CALL and seq not in recorded.steps),
                 default=frontier)
    ended = run.status in ENDED_STATUSES
    segment = DrySegment(run=run, config=config, steps=dict(current.steps), until=frontier, pending=pending,
                         groups=recorded.groups, base=current.base)
    ctx = RunContext(segment, definition=definition,
                     approvals=[a for a in recorded.approvals if a.seq > current.base],
                     attempts=[r for r in recorded.records if r.seq > current.base])

    def replayed(upto: int) -> int:
        return sum(1 for seq in current.steps if seq < upto)

    try:
        definition.run(ctx, payload)
    except ReachedStep as reached:
        return outcome(replayed=replayed(reached.seq))
    except Diverged as differs:
        return outcome(differs.message, replayed=replayed(differs.seq), step=differs.seq)
    except Suspend as waiting:
        if segment.next_seq >= parked:
            return outcome(replayed=replayed(segment.next_seq))
        return outcome(f"the new code waits ({waiting.waiting_for}) before step {parked}",
                       replayed=replayed(segment.next_seq), step=segment.next_seq)
    except Exception as err:
        said = getattr(err, "message", None) or err
        if segment.next_seq < parked:
            return outcome(f"the new code fails before step {parked}: {said}", replayed=replayed(segment.next_seq),
                           step=segment.next_seq)
        if ended:
            return outcome(replayed=replayed(segment.next_seq))  # it fails where the run ended
        # At the parked point itself, before any new step: moved, the run would fail there.
        return outcome(f"the new code fails at step {segment.next_seq}: {said}",
                       replayed=replayed(segment.next_seq), step=segment.next_seq)
    finally:
        segment.close()
    if segment.next_seq >= parked:
        return outcome(replayed=replayed(segment.next_seq))  # it ends where the run is parked, or ended
    return outcome(f"the new code ends before step {parked}", replayed=replayed(segment.next_seq),
                   step=segment.next_seq)
