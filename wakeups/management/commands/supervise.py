"""`manage.py supervise`: the built-in wakeup's process. It holds no worker of its own: it starts
`manage.py worker --stop-when-idle` when the registered deadline comes, at once when a run becomes
runnable, and again if the worker dies; SIGTERM stops the worker (SIGTERM, then SIGKILL to its
process group after a grace period) and the supervisor, leaving no process behind. Starting,
watching and stopping the worker is `runs.children`'s, as for `manage.py demo`.

Beside it, the fleet (wakeups/fleet.py): a worker for each older deploy version holding a pinned
run that has become runnable, from a git worktree of that version's commit (`worker --pinned`),
and the retirement of versions no run needs; `--pinned-only` runs the fleet alone (as the demo,
which runs its own worker, does).

While no worker is up it waits: on PostgreSQL for a NOTIFY (a run enqueued, a deadline registered)
or the registered time, with no query in between but its beat; on SQLite it polls once a second with
one query. Every 20 s it says it is up (`runs.presence`), so a command waiting for a run counts on it
to start a worker.
"""
from __future__ import annotations

import logging
import os
import select
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import connection, connections

from runs import children, presence
from runs.config.checks import COMMAND_CHECKS
from runs.engine import clock
from runs.models import PresenceRole
from runs.worker_lifecycle import RESTART_EXIT
from wakeups.declare import WAKEUP_CHANNEL
from wakeups.fleet import Fleet
from wakeups.listen import RUNNABLE, Listener, listens

log = logging.getLogger("sanoma.supervise")

# One query: is a run queued that the latest deploy's worker runs (its version is one of that
# deploy's workflow versions, or one no deploy knows yet: new code a worker has not started on), and
# what deadline is registered? A run pinned to an older deploy is not the latest worker's to run.
_STATE_SQL = """
SELECT
  EXISTS (SELECT 1 FROM runs_run r WHERE r.status = 'queued' AND (
    EXISTS (SELECT 1 FROM {each}((SELECT v.workflows FROM runs_appversion v ORDER BY v.promoted_at DESC LIMIT 1)) e
            WHERE e.value = r.app_version)
    OR NOT EXISTS (SELECT 1 FROM runs_appversion v WHERE v.version = r.app_version
                   OR EXISTS (SELECT 1 FROM {each}(v.workflows) e WHERE e.value = r.app_version)))),
  (SELECT w.at FROM sanoma_wakeup w WHERE w.id = 1)
"""


def state_sql(vendor: str) -> str:
    """STATE_SQL for the database's vendor: its JSON set-returning function differs."""
    return _STATE_SQL.format(each="jsonb_each_text" if vendor == "postgresql" else "json_each")


STATE_SQL = state_sql("postgresql")
SQLITE_POLL = 1.0
LONGEST_WAIT = 300.0  # with nothing registered and no NOTIFY, look again after this long anyway
GRACE = 30.0  # how long a worker has to stop after SIGTERM before its group is killed
# A worker takes a few seconds to start: it is started this long before the registered deadline,
# so it is up, sees the deadline within its horizon, and wakes the run on time.
LEAD = timedelta(seconds=5)
READY_LINE = "supervisor started"



class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = ("Start a worker when the registered deadline comes or a run becomes runnable, again if it "
            "dies; the worker stops itself when idle (scale to zero).")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--worker-arg", action="append", default=[],
                            help="an extra argument for `manage.py worker` (repeatable)")
        parser.add_argument("--pinned-only", action="store_true",
                            help="start only the workers of pinned versions, no worker of the latest (as ./demo, "
                                 "which runs its own, uses it)")

    def handle(self, *args: Any, **options: Any) -> None:
        self.stopping: list[int] = []
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        signal.set_wakeup_fd(write_fd)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, lambda signum, _frame: self.stopping.append(signum))
        self.wake_fd = read_fd
        self.worker_args = ["--stop-when-idle", *options["worker_arg"]]
        self.worker: subprocess.Popen[bytes] | None = None
        self.listener = Listener([RUNNABLE, WAKEUP_CHANNEL], wake_fd=read_fd) if listens() else None
        self.backoff = 1.0
        self.stdout.write(f"{READY_LINE}: waking workers through "
                          f"{'LISTEN/NOTIFY' if self.listener else f'a {SQLITE_POLL:g} s poll'}")
        self.stdout.flush()
        self.next_beat = 0.0
        self.fleet = Fleet(say=self._say)
        try:
            if options["pinned_only"]:
                self.tend_pinned_only()
                return
            self.beat()  # first: a command run right after the supervisor starts counts on it
            self.start_worker("starting up: catching up on what is due")
            while not self.stopping:
                self.beat()
                self.fleet.tend(quick=self.worker is not None or self.listener is None)
                if self.worker is not None:
                    self.watch_worker()
                else:
                    self.wait_for_work()
        finally:
            self.stop_worker()
            self.fleet.stop()
            try:
                presence.leave()
            except Exception:  # the row ages out instead
                log.warning("removing the supervisor's presence row failed", exc_info=True)
            if self.listener is not None:
                self.listener.close()
            self.stdout.write("supervisor stopped")

    # ---- saying it is up ----------------------------------------------------------------------

    def beat(self) -> None:
        """Every SUPERVISOR_BEAT seconds: commands waiting for a run count on this supervisor to start
        a worker (runs.presence). A failed beat is tried again on the next turn."""
        if time.monotonic() < self.next_beat:
            return
        try:
            presence.beat(role=PresenceRole.SUPERVISOR)
        except Exception:
            log.warning("saying the supervisor is up failed; trying again", exc_info=True)
            connections.close_all()
        self.next_beat = time.monotonic() + presence.SUPERVISOR_BEAT

    # ---- the worker ---------------------------------------------------------------------------

    def start_worker(self, why: str) -> None:
        manage = Path(settings.BASE_DIR) / "manage.py"
        self.worker = children.start([sys.executable, str(manage), "worker", *self.worker_args], die_with_parent=False)
        self.started_at = time.monotonic()
        self.fleet.poke()  # the run that woke us may be a pinned version's
        log.info("worker %s started: %s", self.worker.pid, why)

    def watch_worker(self) -> None:
        assert self.worker is not None
        self._wait_fd(0.5)
        if not children.exited(self.worker):
            return
        pid = self.worker.pid
        code = children.reap(self.worker)  # what it left in its process group killed first
        self.worker = None
        if code == RESTART_EXIT:
            log.info("worker %s stopped to start again on new code", pid)
            self.backoff = 1.0
            self.start_worker("the last one asked to start again (a deploy)")
            return
        if code == 0:
            log.info("worker %s stopped itself (idle)", pid)
            self.backoff = 1.0
            if self.listener is not None:
                self.listener.wait(0)  # what was notified while it ran, it has handled
            return
        log.warning("worker %s died (exit status %s); starting another in %g s", pid, code, self.backoff)
        ends = time.monotonic() + self.backoff
        while not self.stopping and time.monotonic() < ends:
            self._wait_fd(ends - time.monotonic())
        if time.monotonic() - self.started_at > 60:
            self.backoff = 1.0
        else:
            self.backoff = min(self.backoff * 2, 30.0)
        if not self.stopping:
            self.start_worker("the last one died")

    def stop_worker(self) -> None:
        if self.worker is None:
            return
        if children.stop([self.worker], grace=GRACE):
            log.warning("worker %s did not stop within %g s of SIGTERM: killed it", self.worker.pid, GRACE)
        self.worker = None

    # ---- waiting with no worker ---------------------------------------------------------------

    def state(self) -> tuple[bool, datetime | None]:
        try:
            with connection.cursor() as cursor:
                cursor.execute(state_sql(connection.vendor))
                runnable, at = cursor.fetchone()
        except Exception:
            log.exception("reading the wakeup state failed; trying again")
            connections.close_all()
            return False, None
        if isinstance(at, str):  # SQLite hands back text
            at = datetime.fromisoformat(at)
        if at is not None and at.tzinfo is None:
            at = at.replace(tzinfo=UTC)
        return bool(runnable), at

    def wait_for_work(self) -> None:
        runnable, at = self.state()
        if runnable:
            self.start_worker("a run is runnable")
            return
        if at is not None and at - LEAD <= clock.now():
            self.start_worker(f"the deadline {at.isoformat()} is coming")
            return
        until_due = (at - LEAD - clock.now()).total_seconds() if at is not None else LONGEST_WAIT
        until_due = min(until_due, max(self.next_beat - time.monotonic(), 0.0))  # up in time for the next beat
        until_due = min(until_due, self.fleet.wait_hint())  # and for the pinned versions' next look
        if self.listener is None:
            self._wait_fd(min(SQLITE_POLL, until_due))
            return
        notes = self.listener.wait(min(until_due, LONGEST_WAIT))
        if any(channel == RUNNABLE for channel, _ in notes):
            self.start_worker("a run became runnable")

    # ---- pinned versions (wakeups/fleet.py) -----------------------------------------------------

    def tend_pinned_only(self) -> None:
        """`--pinned-only`: no worker of the latest version, only the pinned versions' workers."""
        while not self.stopping:
            self.beat()
            self.fleet.tend(quick=True)
            self._wait_fd(min(self.fleet.wait_hint(), max(self.next_beat - time.monotonic(), 0.0), 1.0))

    def _say(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()

    def _wait_fd(self, seconds: float) -> None:
        ready, _, _ = select.select([self.wake_fd], [], [], max(seconds, 0.0))
        if ready:
            try:
                os.read(self.wake_fd, 512)
            except BlockingIOError:
                pass
