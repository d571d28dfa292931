"""Two runs side by side, step by step: what went in and came out of each step, the policy's
verdict, who approved, how long it took; and of the runs themselves their input, outcome, version
and timing. What differs is named, so "why did this one fail and that one not?" has an answer.

Steps are aligned by what they are (kind and operation, in order), as a diff aligns lines: a step
one run made and the other did not is shown against a gap, and the steps after it line up again.
Both runs are read with the viewer's visibility: a run they may not see is `run_not_found`.
"""
from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from connectors.errors import InvalidInput, IssueCode, input_issue
from runs import ledger
from runs.approvals.permissions import Principal
from runs.models import Run
from runs.selectors import made_from, visible_run
from runs.timing import RunTime, StepTime, run_time
from runs.validation import check_run_id

# What of a step is compared (timing is shown, never counted as a difference: no two runs take
# the same milliseconds).
STEP_FIELDS = ("outcome", "input", "output", "error", "verdict", "approvers", "attempts")


@dataclass(frozen=True)
class Fact:
    name: str
    a: Any
    b: Any

    @property
    def differs(self) -> bool:
        return self.a != self.b


@dataclass(frozen=True)
class StepPair:
    """The steps the two runs made at one point: both, or one against a gap."""

    number: int
    a: StepTime | None
    b: StepTime | None
    differs: tuple[str, ...]  # the fields that differ; ("only in a",) or ("only in b",) for a gap

    @property
    def same(self) -> bool:
        return not self.differs


@dataclass(frozen=True)
class Comparison:
    a: Run
    b: Run
    facts: list[Fact]
    steps: list[StepPair]
    took: tuple[int | None, int | None]  # each run's start to end, in ms (None while it goes on)

    @property
    def differences(self) -> int:
        return sum(1 for f in self.facts if f.differs) + sum(1 for s in self.steps if s.differs)


def _took(timeline: RunTime) -> int | None:
    if timeline.start_ms is None or timeline.end_ms is None:
        return None
    return timeline.end_ms - timeline.start_ms


def _facts(a: Run, b: Run, time_a: RunTime, time_b: RunTime) -> list[Fact]:
    return [
        Fact("workflow", a.workflow, b.workflow),
        Fact("version", a.app_version, b.app_version),
        Fact("status", a.status, b.status),
        Fact("started by", a.started_by, b.started_by),
        Fact("input", a.input, b.input),
        Fact("result", a.result, b.result),
        Fact("error", a.error, b.error),
        Fact("steps", len(time_a.steps), len(time_b.steps)),
    ]


def step_differences(a: StepTime, b: StepTime) -> tuple[str, ...]:
    return tuple(name for name in STEP_FIELDS if getattr(a, name) != getattr(b, name))


def align(steps_a: list[StepTime], steps_b: list[StepTime]) -> list[StepPair]:
    """The two runs' steps paired as a diff pairs lines, by kind and name in order."""
    keys_a = [(s.kind, s.name) for s in steps_a]
    keys_b = [(s.kind, s.name) for s in steps_b]
    pairs: list[tuple[StepTime | None, StepTime | None]] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, keys_a, keys_b, autojunk=False).get_opcodes():
        if tag == "equal":
            pairs.extend(zip(steps_a[i1:i2], steps_b[j1:j2], strict=True))
            continue
        # Different steps at one point (replace), or steps one run made alone (delete, insert):
        # shown at the same height, the longer side against gaps.
        left, right = steps_a[i1:i2], steps_b[j1:j2]
        for index in range(max(len(left), len(right))):
            pairs.append((left[index] if index < len(left) else None, right[index] if index < len(right) else None))
    out = []
    for number, (a, b) in enumerate(pairs, start=1):
        if a is None:
            differs: tuple[str, ...] = ("only in b",)
        elif b is None:
            differs = ("only in a",)
        elif (a.kind, a.name) != (b.kind, b.name):
            differs = ("step",)
        else:
            differs = step_differences(a, b)
        out.append(StepPair(number, a, b, differs))
    return out


def compare_runs(*, a_id: Any, b_id: Any, viewer: str | Principal | None) -> Comparison:
    """Runs `a_id` and `b_id` compared. A bad id is `invalid_input` naming it; a run the viewer may
    not see (or none) is `run_not_found`; a run compared with itself is `invalid_input`."""
    check_run_id(a_id, path=["a"])
    check_run_id(b_id, path=["b"])
    if a_id == b_id:
        raise InvalidInput(f"Choose another run to compare {a_id} with: a run is the same as itself",
                           data={"issues": [input_issue(["b"], "names the same run as a", IssueCode.SAME_RUN)]})
    a = visible_run(run_id=a_id, viewer=viewer)
    b = visible_run(run_id=b_id, viewer=viewer)
    time_a, time_b = run_time(ledger.records_of(a.id)), run_time(ledger.records_of(b.id))
    return Comparison(a, b, _facts(a, b, time_a, time_b),
                      align(_with_reused(b, a, time_a.steps), _with_reused(a, b, time_b.steps)),
                      (_took(time_a), _took(time_b)))


def _with_reused(other: Run, run: Run, steps: list[StepTime]) -> list[StepTime]:
    """`run`'s steps, and when it is a fork of `other`, first the steps of `other` it reused (before
    its `from_step`): its ledger records only what it did itself, yet those steps are its own too,
    so they compare as the same, not as steps only one run made."""
    source = made_from(run)
    if not source or source["act"] != "fork" or source["run_id"] != other.id:
        return steps
    from_step = source.get("from_step") or 0
    reused = [step for step in run_time(ledger.records_of(other.id)).steps if step.seq < from_step]
    return [*reused, *steps]
