"""What ends an advance early: a wait, a lease another worker took, a cancel, a dry replay's stop.

Each is a `BaseException`, so a workflow's `except Exception` cannot swallow it.
"""
from __future__ import annotations

from datetime import datetime


class Suspend(BaseException):
    """The run waits: the advance ends and no process holds the run."""

    def __init__(self, waiting_for: str, *, wake_at: datetime | None = None, requeue: bool = False) -> None:
        super().__init__(waiting_for)
        self.waiting_for = waiting_for
        self.wake_at = wake_at
        self.requeue = requeue


class LeaseLost(BaseException):
    """Another worker took the run over: this advance stops without recording anything more."""


class Cancelled(BaseException):
    """The run was cancelled while this advance ran."""


class ReachedStep(BaseException):
    """A replay that stops at a step (`replay_until`) reached it: everything before it replayed."""

    def __init__(self, seq: int) -> None:
        super().__init__(seq)
        self.seq = seq


class Diverged(BaseException):
    """A dry replay met a step the record does not have: `was` what the run recorded at `seq` (None
    when nothing), `now` what the code makes there. The message is the sentence an operator reads."""

    def __init__(self, seq: int, was: str | None, now: str, message: str = "") -> None:
        self.seq = seq
        self.was = was
        self.now = now
        self.message = message or (f"step {seq} was {was}, now {now}" if was is not None
                                   else f"the run has no step {seq}; the code now makes {now} there")
        super().__init__(self.message)


class Rewind(BaseException):
    """A call's checkpoint written behind (`runs.engine.effects`) could not be written: the body
    runs again from the top of its generation, in the same advance, and this time that call raises
    the error it would have raised had it been written at once (`ledger_write_failed`)."""
