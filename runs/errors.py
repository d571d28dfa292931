"""The codes a run, its approvals and the engine that drives it put on an error.

Registered with the one list of codes (`connectors.errors.register_codes`) on import; on the wire
each is its plain string (`RunCode.RUN_ENDED == "run_ended"`).
"""
from __future__ import annotations

from enum import StrEnum

from connectors.errors import register_codes


@register_codes
class RunCode(StrEnum):
    """A run's own refusals and failures, and its approvals'."""

    # runs
    RUN_NOT_FOUND = "run_not_found"  # no such run, or the caller may not see it
    RUN_EXISTS = "run_exists"  # starting with a run id already taken by a run the caller may not see
    RUN_ENDED = "run_ended"  # the run has ended: no more calls, cancels or decisions
    RUN_RUNNING = "run_running"  # the run has not ended yet (asking for its result)
    NO_WORKER = "no_worker"  # a command would wait for a run no worker is up to advance: nothing was started
    RUN_CANCELLED = "run_cancelled"  # the run was cancelled
    WORKFLOW_NOT_FOUND = "workflow_not_found"  # no workflow of that name (in this version)
    REPLAY_DIVERGED = "replay_diverged"  # the workflow no longer makes the calls it made before
    CALL_NOT_IN_OUTLINE = "call_not_in_outline"  # a ctx call from code the workflow's outline does not show
    BAD_RETURN_VALUE = "bad_return_value"  # the workflow returned something that is not JSON
    WAIT_TIMED_OUT = "wait_timed_out"  # ctx.wait_message's deadline passed before a message came
    # approvals
    APPROVAL_REJECTED = "approval_rejected"
    APPROVAL_WITHDRAWN = "approval_withdrawn"
    NOT_APPROVER = "not_approver"  # the decider is not the approval's approver
    NO_PENDING_APPROVAL = "no_pending_approval"  # nothing (or not that approval) waits for a decision
    ALREADY_DECIDED = "already_decided"
