"""What a command that waits for a run does about workers: it starts nothing when no worker would
run it, notices a worker that goes away while it follows, runs the run itself with `--here`, and
says what became of the run when it gives up.

- `require_worker(version, what=...)` before anything is started: a `no_worker` error naming the
  two ways on (`manage.py worker` in another terminal, or `--here`) when no worker of `version` is
  up and no supervisor would start one (`runs.presence`). Nothing is left queued.
- `Watch(version)`: asked on each turn of a follow, at most once a second while the run needs a
  worker (queued or running), it answers why no worker will (the one that was up died, say).
- `give_up(run, by=..., why=...)`: a run that has not begun is cancelled with `why` as the reason
  (unless `cancel=False`: a run a person asked for is theirs to keep); one that has begun is left as
  it is, and the answer says how to follow it or stop it.
- `run_here(run, config, seconds=...)`: the run, and the runs it starts, advanced in this process
  by the engine's in-process drain until it ends, or waits with nothing due within `seconds`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from connectors.errors import SanomaError
from runs import presence
from runs import services as run_services
from runs.approvals.permissions import Principal
from runs.config.resolution import ResolvedConfig
from runs.engine.drain import drain
from runs.errors import RunCode
from runs.models import ENDED_STATUSES, Run, RunStatus

NO_WORKER = RunCode.NO_WORKER
CHECK_EVERY = 1.0  # seconds between presence checks while following
POLL_SECONDS = 0.2


def require_worker(version: str, *, what: str) -> None:
    """Raise `no_worker` (nothing started) when no worker would advance a run of `version`.
    `what` names the waiting, e.g. "drift waits for its run"."""
    found = presence.worker_for(version)
    if not found.ok:
        raise SanomaError(f"{what}, and {found.reason}. Nothing was started.", code=NO_WORKER,
                          data={"version": version, "workers": list(found.workers)})


@dataclass
class Watch:
    """Whether the run being followed still has a worker to advance it."""

    version: str
    _next: float = field(default=0.0)

    def stranded(self, run: Run) -> str | None:
        """Why no worker will advance `run` now (None: one will, or the run needs none yet)."""
        if run.status not in (RunStatus.QUEUED, RunStatus.RUNNING) or time.monotonic() < self._next:
            return None
        self._next = time.monotonic() + CHECK_EVERY
        found = presence.worker_for(self.version)
        return None if found.ok else found.reason


def give_up(run: Run, *, by: str | Principal, why: str, cancel: bool = True) -> str:
    """Stop waiting for `run`: cancel it when it has not begun (with `why`; unless not `cancel`),
    else leave it. Says which."""
    run.refresh_from_db()
    if run.status in ENDED_STATUSES:
        return f"run {run.id} has {run.status}"
    if cancel and run.status == RunStatus.QUEUED and not run.steps.exists():
        try:
            run_services.cancel(run_id=run.id, by=by, reason=why)
        except SanomaError as err:  # it began meanwhile, or this user may not cancel it: leave it
            return f"run {run.id} is left {run.status} ({err.message})"
        return f"run {run.id} was cancelled before it began ({why})"
    who = by if isinstance(by, str) else by.id
    return (f"run {run.id} is left {run.status}: it goes on when a worker runs (follow it with `manage.py show "
            f"{run.id}`, stop it with `manage.py cancel {run.id} --as {who}`)")


def run_here(run: Run, config: ResolvedConfig, *, seconds: float = 0.0) -> Run:
    """Advance `run` and the runs it starts in this process until it ends, or for `seconds` more
    while it waits (a decision made elsewhere, a message, a sleep coming due); the run, fresh."""
    deadline = time.monotonic() + max(0.0, seconds)
    while True:
        advanced = drain(config, worker_id=f"here:{presence.own_name()}", family=run.id)
        run.refresh_from_db()
        if run.status in ENDED_STATUSES or time.monotonic() >= deadline:
            return run
        if not advanced:
            time.sleep(POLL_SECONDS)


__all__ = ["NO_WORKER", "Watch", "give_up", "require_worker", "run_here"]
