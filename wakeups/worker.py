"""The worker: a django-q2 cluster that advances runs, the deadline sweep beside it, the schedules'
fires and, with `stop_when_idle` and one declared wakeup, the stop rule (`manage.py worker` runs one).

On PostgreSQL the sweep waits until the next deadline (a timer, re-armed by a NOTIFY when a run
suspends with an earlier one) instead of polling, and the cluster's broker takes a task as soon as
its enqueue's NOTIFY arrives (wakeups/broker.py); on SQLite the sweep polls every
SANOMA_SWEEP_SECONDS and the broker every Q_CLUSTER["poll"] seconds.

It refuses to start while a variable the environment of a connector on its real driver declares is
missing or invalid, naming every one. The check is the credentials store's, reached through the
engine's hook (`runs.engine.secrets.startup_problems`): this layer may not import `changes`. So is
`keep_fresh`, which makes the cluster's processes pick up a set, changed or cleared credential.
"""
from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connections
from django_q.cluster import Cluster

from runs import presence
from runs.approvals import announce
from runs.config.resolution import ResolvedConfig
from runs.deploys import deploy
from runs.engine import clock, controls, secrets
from runs.models import PresenceRole
from runs.versions import loaded_policy, startup_report, sync_workflow_entries
from runs.worker_lifecycle import restart_requested, worker_started
from wakeups import broker, checks
from wakeups.broker import ListeningORM
from wakeups.declare import declared_wakeups
from wakeups.idle import StopRule
from wakeups.listen import DEADLINE, RUNNABLE, Listener, listens
from wakeups.pinned import PinnedStopRule, pinned_problem
from wakeups.schedules import Firer
from wakeups.sweep import sweep

log = logging.getLogger("sanoma.worker")

# With a timer, the longest the sweep waits while a run is queued or running: expired leases and
# lost tasks are looked for this often.
LONGEST_WAIT = 2.0
# ... and with none: a run that suspends with a deadline, or becomes runnable, ends the wait with
# its NOTIFY, so an idle worker's pass (one read transaction) is made only this often; it also
# bounds how late an approval announcement's retry is queued.
IDLE_LONGEST_WAIT = 10.0
def beat_every() -> float:
    """How often the worker says it is up (runs.presence): every WORKER_BEAT seconds, and at least
    three times a lease, since `manage.py health --worker` counts a worker whose last beat is older
    than its lease (SANOMA_LEASE_SECONDS) as unhealthy."""
    return min(presence.WORKER_BEAT, float(settings.SANOMA_LEASE_SECONDS) / 3)
IDLE_STOP_EXIT = 0


def _pause(seconds: float, *, until: list[int]) -> None:
    """Sleep `seconds`, in slices of at most 0.1 s, ending early once `until` is not empty."""
    ends = time.monotonic() + seconds
    while not until and (left := ends - time.monotonic()) > 0:
        time.sleep(min(left, 0.1))


def stop_cluster(cluster: Cluster, *, grace: float) -> str | None:
    """Stop the cluster, letting the segments in flight end, within `grace` seconds; None when it
    stopped as asked, else what happened instead.

    `Cluster.stop()` alone can hang for good: a signal sent to the whole process group (systemd's
    default, Ctrl-C in a shell) also ends the cluster's sentinel, and when it ends while waiting on
    the cluster's stop event, setting that event waits for it forever. So the stop runs in a thread,
    and this one watches: a sentinel gone means the cluster is gone; past `grace`, what is left of
    it is killed (the runs in flight are taken over once their leases expire, as after a crash).
    """
    done = threading.Event()

    def stop() -> None:
        try:
            cluster.stop()
        except Exception:
            log.exception("stopping the cluster failed")
        finally:
            done.set()

    sentinel = cluster.sentinel
    family = _descendants(sentinel.pid) if sentinel is not None and sentinel.pid else []
    threading.Thread(target=stop, name="cluster-stop", daemon=True).start()
    ends = time.monotonic() + grace
    while not done.wait(0.1):
        if sentinel is None or not sentinel.is_alive():
            if done.wait(1.0):  # it stopped as asked, and the stop is returning
                return None
            _kill([pid for pid in family if _alive(pid)])
            return "the cluster's processes had already stopped (the signal reached them too)"
        if time.monotonic() >= ends:
            family = [*_descendants(sentinel.pid), *family] if sentinel.pid else family
            sentinel.kill()
            _kill([pid for pid in dict.fromkeys(family) if _alive(pid)])
            sentinel.join(5)
            return (f"the cluster did not stop within {grace:g} s (SANOMA_WORKER_STOP_SECONDS): its processes were "
                    "killed; the runs they held are taken over once their leases expire")
    return None


def _descendants(pid: int) -> list[int]:
    """The processes below `pid` (children first), read from /proc; empty where there is none."""
    children: dict[int, list[int]] = {}
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return []
    for entry in entries:
        try:
            with open(f"/proc/{entry}/stat") as stat:
                text = stat.read()
        except OSError:
            continue
        parent = int(text[text.rindex(")") + 2 :].split()[1])
        children.setdefault(parent, []).append(int(entry))
    found: list[int] = []
    todo = [pid]
    while todo:
        below = children.get(todo.pop(), [])
        found += below
        todo += below
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            text = stat.read()
    except OSError:
        return False
    return text[text.rindex(")") + 2 :].split()[0] != "Z"


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


class WorkerCannotStart(Exception):
    """What keeps the worker from starting (a connector's environment incomplete), in words."""


@dataclass
class Worker:
    """One worker process's life: `start` checks and announces it, `run` loops until a signal, the
    time limit, a restart asked for by a deploy or (with `stop_when_idle`) the stop rule ends it.
    `run` answers the restart asked for (its `why`), or None when the worker stopped for good.

    `say` and `warn` take what the worker tells its operator (the command's stdout and stderr)."""

    config: ResolvedConfig
    say: Callable[[str], None]
    warn: Callable[[str], None]
    promote: bool = False
    for_seconds: float | None = None
    stop_when_idle: bool = False
    started_at: float = field(default_factory=time.time)  # a restart asked for before this started us
    stop: list[int] = field(default_factory=list)  # the signals received; a handler only appends
    rule: StopRule | PinnedStopRule | None = None
    # A pinned deploy version this worker serves (wakeups/pinned.py): only its pinned runs, no
    # schedules, no deploy, no sync, no restart requests.
    pinned: str = ""

    def start(self) -> None:
        """The checks and announcements before the loop: `WorkerCannotStart` when a connector on its
        real driver lacks its environment."""
        config = self.config
        # The environment of every connector that runs on its real driver (one on its fake needs none).
        on_drivers = [c for c in config.connectors
                      if not (settings.SANOMA_FAKES == "instance" and c.vendor in config.fakes)]
        problems = secrets.startup_problems(on_drivers)
        if problems:
            raise WorkerCannotStart("The worker cannot start: " + ", ".join(problems) + "; set each in the "
                                    "worker's environment, or store it with `manage.py credentials set NAME`")
        if self.pinned:
            self._start_pinned()
            return
        sync_workflow_entries(config)  # every workflow of the config has a row start permissions are granted on
        # The deploy first: this version registered, every parked run of other versions proven and
        # migrated or pinned, held calls judged again when the policy changed (runs.deploys).
        try:
            for line in deploy(config=config, promote=self.promote).lines():
                self.say(line)
        except Exception as err:  # the worker still runs its own runs; the deploy can be run again
            log.exception("the deploy failed")
            self.warn(f"the deploy failed ({type(err).__name__}: {err}): parked runs of other versions were not "
                      "moved; run `manage.py deploy` once the cause is fixed")
        for warning in startup_report(config, promote=self.promote):
            self.warn(warning)
        for failure in worker_started(config):  # e.g. change runs stamped onto this version after a deploy
            self.warn(f"at start: {failure}")
        self.say(f"worker for {config.version}: {len(config.workflows)} workflow(s); {loaded_policy(config.policy)}")
        if self.stop_when_idle:
            wakeups = declared_wakeups(config)
            self.rule = StopRule(config=config, wakeups=wakeups,
                                 horizon=timedelta(seconds=settings.SANOMA_IDLE_HORIZON_SECONDS))
            if not self.rule.enabled:
                self.warn(f"--stop-when-idle: {len(wakeups)} wakeups declared (one is needed): "
                          "this worker never stops itself")

    def _start_pinned(self) -> None:
        config = self.config
        problem = pinned_problem(config, version=self.pinned)
        if problem:
            raise WorkerCannotStart(problem)
        self.say(f"worker for {config.version} (pinned: its runs only, no schedules, no deploy): "
                 f"{len(config.workflows)} workflow(s); {loaded_policy(config.policy)}")
        if self.stop_when_idle:
            self.rule = PinnedStopRule(config=config,
                                       horizon=timedelta(seconds=settings.SANOMA_IDLE_HORIZON_SECONDS))

    def run(self) -> dict[str, Any] | None:
        """The loop, with the cluster beside it; the restart asked for, if that is what ended it."""
        config, stop, rule = self.config, self.stop, self.rule
        secrets.keep_fresh()  # the cluster's processes pick up a set, changed or cleared credential
        # Up, as far as commands waiting for a run can tell (runs.presence): said before the ready line.
        presence.beat(role=PresenceRole.WORKER, version=config.version)
        connections.close_all()  # the cluster forks: children must not share this process's sockets
        # The pauses' and limits' changes this loop hears of, shared with the processes the cluster
        # forks: while it listens they keep their copies without reading them (runs.engine.controls).
        watch = controls.Watch() if listens() else None
        controls.install(watch)
        # The ORM broker, woken by the NOTIFY every enqueue sends (PostgreSQL) instead of polling.
        # Cluster() installs its own SIGTERM/SIGINT handlers: ours replace them.
        cluster = Cluster(broker=ListeningORM(list_key=str(settings.Q_CLUSTER["name"])))
        checks.install()  # a task right after another skips its connection's SELECT 1 (wakeups/checks.py)
        broker.install()  # the pusher takes as many tasks as its local queue has room for (wakeups/broker.py)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, lambda signum, _frame: stop.append(signum))
        cluster.start()
        restart: dict[str, Any] | None = None
        listener: Listener | None = None
        if listens():
            read_fd, write_fd = os.pipe()
            os.set_blocking(read_fd, False)
            os.set_blocking(write_fd, False)
            signal.set_wakeup_fd(write_fd)
            listener = Listener([DEADLINE, RUNNABLE, controls.CHANNEL], wake_fd=read_fd)
        how = "waiting for the next deadline" if listener else f"sweeping every {settings.SANOMA_SWEEP_SECONDS}s"
        self.say(f"worker started: {settings.Q_CLUSTER['workers']} processes, {how}")
        firer = Firer(config)
        ends = time.monotonic() + self.for_seconds if self.for_seconds else None
        next_check = time.monotonic() + settings.SANOMA_IDLE_CHECK_SECONDS
        stopped_idle = None
        beat_seconds = beat_every()
        next_beat = time.monotonic() + beat_seconds  # and again every beat_seconds
        next_look = 0.0  # when the next pass (sweep, fires, announcements) is due
        try:
            while not stop and (ends is None or time.monotonic() < ends):
                try:
                    if time.monotonic() >= next_beat:
                        presence.beat(role=PresenceRole.WORKER, version=config.version)
                        next_beat = time.monotonic() + beat_seconds
                    # A pinned worker's code is a fixed commit: a deploy's restart is not for it. A
                    # file's time, read on every turn (no query).
                    restart = None if self.pinned else restart_requested(since=self.started_at)
                    if restart is not None:  # a deploy put new code in the live root: start again on it
                        break
                    if time.monotonic() >= next_look:
                        swept = sweep(versions=config.owned_versions, cluster=str(settings.Q_CLUSTER["name"]))
                        if not self.pinned:
                            firer.fire()
                            announce.sweep_due()  # approval announcements due: a retry, a lost post, a lost task
                        next_look = time.monotonic() + self._wait(
                            firer, next_check if rule else None, swept.next_wake,
                            longest=LONGEST_WAIT if swept.busy or listener is None else IDLE_LONGEST_WAIT)
                    if rule is not None and rule.enabled and time.monotonic() >= next_check:
                        outcome = rule.check(closed=lambda: bool(stop))
                        next_check = time.monotonic() + settings.SANOMA_IDLE_CHECK_SECONDS
                        next_look = min(next_look, next_check)
                        if outcome.stop:
                            stopped_idle = outcome
                            break
                    if listener is None:
                        _pause(settings.SANOMA_SWEEP_SECONDS, until=stop)
                        next_look = 0.0
                    else:
                        # Woken at least every LONGEST_WAIT for a restart asked for; a pass only when due.
                        turn = min(next_look, next_beat, time.monotonic() + LONGEST_WAIT)
                        next_look = self._listen(listener, until=turn, look=next_look, watch=watch)
                except Exception:  # a database hiccup must not stop the worker
                    log.exception("the sweep failed; trying again")
                    connections.close_all()
                    _pause(settings.SANOMA_SWEEP_SECONDS, until=stop)
                    if listener is not None:
                        try:
                            listener.close()
                            listener = Listener([DEADLINE, RUNNABLE, controls.CHANNEL], wake_fd=listener.wake_fd)
                        except Exception:
                            log.exception("listening again failed")
                        if watch is not None:
                            watch.changed()  # a change made while it was not listening went unheard
        finally:
            try:
                presence.leave()
            except Exception:  # the row ages out instead
                log.warning("removing this worker's presence row failed", exc_info=True)
            if stopped_idle is not None and rule is not None:
                self.say(f"worker stopping: idle, next deadline "
                         f"{stopped_idle.at.isoformat() if stopped_idle.at else 'none'}")
                rule.stopped(stopped_idle.at, cluster.stop)
            else:
                self.say("worker stopping" + (f" to start again: {restart['why']}" if restart else ""))
                trouble = stop_cluster(cluster, grace=settings.SANOMA_WORKER_STOP_SECONDS)
                if trouble:
                    self.warn(f"worker stopping: {trouble}")
            if listener is not None:
                listener.close()
            controls.install(None)  # no loop listens for this process any more
        return restart

    @staticmethod
    def _listen(listener: Listener, *, until: float, look: float, watch: controls.Watch | None = None) -> float:
        """Wait on the NOTIFYs until `until` (time.monotonic()); when the next pass is due now.

        A run that suspends with a deadline (`sanoma_deadline`) makes the pass due at once: its
        deadline may be earlier than the one waited for. A run that becomes runnable
        (`sanoma_runnable`: the broker takes it) only brings the pass within LONGEST_WAIT, since a
        lease to watch or a task to miss now exists; the wait goes on without a transaction. A
        pause's or a limit's change (`sanoma_controls`) is told to the `watch`."""
        while True:
            if watch is not None:
                watch.listening(True)
            try:
                heard = listener.wait(until - time.monotonic())
            finally:
                if watch is not None:
                    watch.listening(False)
            notes = [note for note in heard if note[0] != controls.CHANNEL]
            if watch is not None and len(notes) < len(heard):
                watch.changed()
            if not notes:  # the time is up, a signal, or a control changed (the caller waits on)
                return look
            if any(channel == DEADLINE for channel, _ in notes):
                return 0.0
            look = min(look, time.monotonic() + LONGEST_WAIT)
            until = min(until, look)

    def _wait(self, firer: Firer, next_check: float | None, next_wake: datetime | None, *,
              longest: float = LONGEST_WAIT) -> float:
        """Seconds until the earliest of: the next sleeper's deadline (as the sweep just read it), the
        next fire, the next idle check, and `longest`. A run that suspends with an earlier deadline
        meanwhile ends the wait with its NOTIFY."""
        now = clock.now()
        waits = [longest]
        for deadline in (next_wake, None if self.pinned else firer.next_due):
            if deadline is not None:
                waits.append((deadline - now).total_seconds() + 0.001)
        if next_check is not None:
            waits.append(next_check - time.monotonic())
        return max(0.0, min(waits))
