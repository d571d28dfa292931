"""`ctx.continue_as_new`: the run's next generation written as one checkpoint (its `continue` step
and `run.continued` record), then the body stopped so `history.run_generations` starts it again.
Apart from `runs.engine.history` because it writes through a Segment, which reads histories."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from pydantic import BaseModel

from connectors.errors import InvalidInput
from runs.engine.history import ContinuedAsNew
from runs.engine.segment import Checkpoint, Segment
from runs.models import LedgerKind, StepKind
from runs.validation import validate_input

if TYPE_CHECKING:
    from runs.config.workflows import WorkflowDefinition


def continue_as_new(segment: Segment, definition: WorkflowDefinition, input: Any, *, in_all: bool) -> NoReturn:
    """Record the run's new generation (its `continue` step and `run.continued` record, one
    checkpoint) and stop the body: `run_generations` starts it again with `input`."""
    if in_all:
        raise InvalidInput("ctx.continue_as_new cannot be called from a ctx.all member: call it from run")
    input = {} if input is None else input
    if isinstance(input, BaseModel):
        input = input.model_dump(mode="json")
    validate_input(definition.input, input, name=definition.name)
    seq = segment.take_seq()
    recorded = segment.replayed(seq, StepKind.CONTINUE, "")
    if recorded is not None:  # never: a replay starts after the latest continue step
        raise ContinuedAsNew(seq, (recorded.output or {}).get("input"), segment.generation + 1)
    segment.check_time()
    generation = segment.generation + 1
    body = {"input": input, "generation": generation}
    step = segment.step(seq, StepKind.CONTINUE, "", output=body)
    segment.commit(Checkpoint(step, [segment.record(LedgerKind.RUN_CONTINUED, seq, body)]))
    raise ContinuedAsNew(seq, input, generation)
