"""A run's history as replay reads it, and `ctx.continue_as_new`: where replay starts.

Replay runs the workflow from the top on every advance, so what it reads must cost little per
recorded step: `load` reads only the columns replay looks at (seq, kind, name, output, error,
next_seq) as rows, one query, into `RecordedStep`s (plain slotted objects: no model instance, no
validation per step).

A run that loops for ever would still pay for every round it ever made. `ctx.continue_as_new(input)`
ends the run's current *generation*: a `continue` step (with its `run.continued` record) records the
new input, and the body starts again from the top with it, in the same run: same id, same ledger,
same page. Every replay afterwards starts at the latest `continue` step (`base`): the steps before
it are kept, shown and verified, but never read again. Step numbers go on growing across
generations, so every record keeps its one place in the run's history.
"""
from __future__ import annotations

import gc
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from runs.engine import bound
from runs.engine.stops import Rewind
from runs.models import Run, Step, StepKind

if TYPE_CHECKING:
    from runs.engine.segment import Segment

# The columns replay reads, in this order.
COLUMNS = ("seq", "kind", "name", "output", "error", "next_seq")
# A history longer than this is built with the garbage collector paused (see `load`).
GC_PAUSE_ROWS = 1000


class Replayed(Protocol):
    """What replay reads of a recorded step: a `RecordedStep`, or a `Step` written in this advance."""

    @property
    def seq(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def output(self) -> Any: ...
    @property
    def error(self) -> Any: ...
    @property
    def next_seq(self) -> int: ...


class RecordedStep:
    """A recorded step as replay reads it (the columns of `COLUMNS`)."""

    __slots__ = COLUMNS

    def __init__(self, seq: int, kind: str, name: str, output: Any, error: Any, next_seq: int) -> None:
        self.seq = seq
        self.kind = kind
        self.name = name
        self.output = output
        self.error = error
        self.next_seq = next_seq

    def __repr__(self) -> str:
        return f"RecordedStep({self.seq}, {self.kind!r}, {self.name!r})"


@dataclass
class History:
    """What an advance replays: the steps of the run's current generation (after `base`), the
    generation's input, and its number (1 until the run first continues as new)."""

    steps: dict[int, Replayed]
    input: Any
    base: int = 0
    generation: int = 1


_STEPS = Step._meta.db_table
_LOAD_SQL = (
    f"SELECT seq, kind, name, output, error, next_seq FROM {_STEPS} WHERE run_id = %s AND seq >= "
    f"COALESCE((SELECT seq FROM {_STEPS} WHERE run_id = %s AND kind = %s ORDER BY seq DESC LIMIT 1), 0) "
    "ORDER BY seq")


# The claim's read on PostgreSQL (`load_linked`): the same steps, each row with the run's last
# ledger record's link beside it (one row of NULL step columns when the run has no step yet).
_LOAD_LINKED_SQL = (
    "SELECT s.seq, s.kind, s.name, s.output, s.error, s.next_seq, last.chain_index, last.hash FROM (SELECT 1) AS one "
    "LEFT JOIN LATERAL (SELECT chain_index, hash FROM runs_ledgerrecord WHERE run_id = %s "
    "ORDER BY chain_index DESC LIMIT 1) AS last ON true "
    f"LEFT JOIN LATERAL ({_LOAD_SQL}) AS s ON true ORDER BY s.seq")


def load(run: Run) -> History:
    """The run's current generation, read in one query: its `continue` step (if any) and the
    steps after it. The boundary is found walking the (run, seq) index back from the end, so its
    cost is the generation's, not the run's whole history's. Plain SQL, portable to SQLite (on
    PostgreSQL prepared once per connection, `runs.engine.bound`): the rows come back as tuples,
    their JSON decoded here (Django's JSONField would decode it too, through more layers)."""
    claimed = getattr(run, "_claimed_history", None)
    if claimed is not None:  # read by the claim, in its transaction (runs.engine.transitions.claim)
        run._claimed_history = None  # type: ignore[attr-defined]  # once: a later load reads afresh
        return claimed
    return _history(run, bound.rows(_LOAD_SQL, [run.pk, run.pk, StepKind.CONTINUE.value]))


def load_linked(run: Run) -> tuple[History, tuple[int, str] | None]:
    """`load`, and the run's last ledger record's link `(chain_index, hash)` (None when it has no
    record, or the record no link), read in the same statement (PostgreSQL): the claim reads both
    under the run row's lock, so the advance's first checkpoint can link its record after that one
    in Python instead of asking the ledger's trigger (`runs.engine.segment`)."""
    rows = bound.rows(_LOAD_LINKED_SQL, [run.pk, run.pk, run.pk, StepKind.CONTINUE.value])
    index, hash = rows[0][6:] if rows else (None, None)
    link = (int(index), hash) if index is not None and index >= 0 and hash else None
    return _history(run, [row[:6] for row in rows if row[0] is not None]), link


def _history(run: Run, rows: list[Any]) -> History:
    # Building many objects at once sets the garbage collector walking them all, again and again,
    # though none is garbage: a long history is built with it paused (measured: 135 -> 56 ms of CPU
    # for 20,000 steps).
    paused = len(rows) > GC_PAUSE_ROWS and gc.isenabled()
    if paused:
        gc.disable()
    try:
        outputs = _decoded([row[3] for row in rows])
        steps: dict[int, Replayed] = {
            seq: RecordedStep(seq, kind, name, output, _json(error) if error is not None else None, next_seq)
            for (seq, kind, name, _, error, next_seq), output in zip(rows, outputs, strict=True)}
    finally:
        if paused:
            gc.enable()
    return current(run.input, steps)


def _decoded(values: list[Any]) -> list[Any]:
    """JSON columns decoded, text ones in one `json.loads` of them all (a call per value costs more
    than the decoding of a small object)."""
    if all(isinstance(value, str) or value is None for value in values):
        return list(json.loads("[" + ",".join("null" if value is None else value for value in values) + "]"))
    return [_json(value) for value in values]


def _json(value: Any) -> Any:
    """A JSON column as the database driver gave it: text (SQLite; PostgreSQL through Django), or
    already decoded."""
    return json.loads(value) if isinstance(value, str | bytes) else value


def load_steps(run: Run) -> dict[int, Replayed]:
    """The steps an advance of `run` replays (those of its current generation)."""
    return load(run).steps


def current(input: Any, steps: Mapping[int, Replayed]) -> History:
    """The current generation of a run started with `input` whose recorded steps are `steps`:
    the steps after its latest `continue` step, and the input that step recorded."""
    base = max((seq for seq, step in steps.items() if step.kind == StepKind.CONTINUE), default=0)
    if not base:
        return History(steps=dict(steps), input=input)
    boundary = steps[base].output or {}
    return History(steps={seq: step for seq, step in steps.items() if seq > base}, input=boundary.get("input"),
                   base=base, generation=int(boundary.get("generation") or 2))


class ContinuedAsNew(BaseException):
    """The body called `ctx.continue_as_new`: its `continue` step is written; the body starts
    again with `input`. A BaseException, so a workflow's `except Exception` cannot swallow it."""

    def __init__(self, seq: int, input: Any, generation: int) -> None:
        super().__init__(f"continued as new at step {seq}")
        self.seq = seq
        self.input = input
        self.generation = generation


def run_generations(segment: Segment, input: Any, run: Callable[[Any], Any], parse: Callable[[Any], Any]) -> Any:
    """Run the body (`run(parse(input))`) from the top; each time it continues as new, again from
    the top with its new input, after its `continue` step, in the same advance; after a rewind
    (`runs.engine.effects`), again from the top with the same input."""
    segment.input = input
    while True:
        try:
            return run(parse(segment.input))
        except ContinuedAsNew as new:
            segment.begin_generation(new.seq, new.generation)
            segment.input = new.input
        except Rewind:  # a checkpoint written behind failed: again from the top (`runs.engine.effects`)
            segment.rewind()
