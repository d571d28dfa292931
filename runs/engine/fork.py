"""Checking a fork before it is made: replay the current code over a run's recorded steps, dry.

A fork of run R from step N reuses R's steps before N and goes on live from N on the current
code. That is only sound when the current code, replayed over those steps, makes the very same
calls in the same order and reaches step N. This replays it dry, over the steps before N, with
nothing written (`runs.engine.segment.DrySegment`, as the proof of a parked run does: the body
stops as it takes step N) and answers which steps it reuses, or why the fork cannot be made.
"""
from __future__ import annotations

from connectors.errors import ErrorCode, InvalidInput, IssueCode, SanomaError, error_code, input_issue
from runs.config.resolution import ResolvedConfig
from runs.engine import history
from runs.engine.context import RunContext
from runs.engine.recorded import Recorded
from runs.engine.segment import DrySegment
from runs.engine.stops import Diverged, ReachedStep, Suspend
from runs.errors import RunCode
from runs.models import Approval, Run


def _refused(message: str, **data: object) -> SanomaError:
    return SanomaError(message, code=ErrorCode.INVALID_INPUT, data={"issues": [
        input_issue(["from_step"], message, IssueCode.CANNOT_FORK)], **data})


def check_fork(*, source: Run, from_step: int, config: ResolvedConfig) -> list[int]:
    """The seqs of the steps a fork of `source` from `from_step` reuses; `invalid_input` (with
    `replay_diverged` named in its data when the code changed) if it cannot be made."""
    if isinstance(from_step, bool) or not isinstance(from_step, int):
        raise InvalidInput("from_step must be a step number (a whole number)",
                           data={"issues": [input_issue(["from_step"], "not a number", IssueCode.TYPE)]})
    definition = config.workflows.get(source.workflow)
    if definition is None:
        raise _refused(f"Workflow {source.workflow} is not in the current code ({config.version}): "
                       "nothing to fork onto")
    recorded = {step.seq: step for step in source.steps.all()}
    if from_step not in recorded:
        shown = ", ".join(str(seq) for seq in sorted(recorded)) or "none"
        raise _refused(f"Run {source.id} has no step {from_step}; its steps are {shown}",
                       steps=sorted(recorded))
    reused = {seq: step for seq, step in recorded.items() if seq < from_step}
    # The fork replays as its run will: from the latest ctx.continue_as_new before `from_step`, if any.
    current = history.current(source.input, reused)
    try:
        payload = definition.input.model_validate(current.input)
    except Exception as err:
        raise _refused(f"Run {source.id}'s input no longer matches {definition.name}'s schema: {err}") from None
    approvals = list(Approval.objects.filter(run=source, seq__gt=current.base, seq__lt=from_step))
    begun = Recorded(run=source, steps=reused, approvals=approvals).pending()
    segment = DrySegment(run=source, config=config, steps=dict(current.steps), until=from_step, base=current.base,
                         pending={seq: what for seq, what in begun.items() if seq < from_step})
    ctx = RunContext(segment, definition=definition, approvals=approvals)
    try:
        definition.run(ctx, payload)
    except ReachedStep:
        return sorted(reused)
    except Diverged as differs:
        raise _refused(f"Run {source.id} cannot be forked from step {from_step} onto the current code: "
                       f"{differs.message}",
                       diverged={"seq": differs.seq, "was": differs.was, "now": differs.now}) from None
    except Suspend as waiting:
        raise _refused(f"The current code of {definition.name} waits ({waiting.waiting_for}) before step "
                       f"{from_step} over run {source.id}'s recorded steps; fork from an earlier step") from None
    except Exception as err:
        if error_code(err) == RunCode.REPLAY_DIVERGED:
            data = dict(getattr(err, "data", None) or {})
            raise _refused(f"Run {source.id} cannot be forked from step {from_step} onto the current code: "
                           f"{getattr(err, 'message', err)}", diverged=data) from None
        raise _refused(f"The current code of {definition.name} fails before step {from_step} over run "
                       f"{source.id}'s recorded steps: {err}") from None
    finally:
        segment.close()
    raise _refused(f"The current code of {definition.name} ends before step {from_step} over run {source.id}'s "
                   "recorded steps: there is nothing to go on with")
