"""Child processes a command starts and looks after: the demo's worker and web server,
`manage.py supervise`'s worker.

- `start(argv)`: the child in its own session, so its own process group (a worker's django-q2
  cluster forks into it) and out of reach of the terminal's Ctrl-C; with `die_with_parent`, Linux
  sends it SIGTERM if the parent dies without cleaning up (PR_SET_PDEATHSIG).
- `exited(child)`: whether it has exited, without reaping it: an unreaped child's pid stays
  reserved, so its process group id cannot be reused by an unrelated group before it is killed.
- `reap(child)`: what is left of its process group killed, then the child reaped: its exit status.
  `restarting(child)` reaps a child that exited asking to be started again (`RESTART_EXIT`).
- `stop(children, grace=)`: SIGTERM to each, up to `grace` seconds for them all to exit (or until a
  second stop signal), then SIGKILL to what is left of each group, and each reaped.
- `StopSignals`: SIGTERM, SIGINT and SIGHUP noted instead of fatal; a second one means "kill now".
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType

from runs.worker_lifecycle import RESTART_EXIT

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn asking Linux to SIGTERM the child when its parent dies (None elsewhere).

    Chosen over a watchdog: the kernel delivers it however the parent dies, at once, with no
    polling thread, and it works for a child whose code the parent does not control (`runserver`).
    The worker turns SIGTERM into its clean stop. It reaches the child only (not the cluster the
    worker forks), which is why it is SIGTERM and not SIGKILL: the worker stops its own cluster.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:  # in the child, between fork and exec (the parent runs no threads)
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def start(argv: Sequence[str], *, env: dict[str, str] | None = None, die_with_parent: bool = True,
          output: Path | None = None) -> subprocess.Popen[bytes]:
    """`argv` started in a new session (its pid is its process group's id), stdin closed; its
    stdout and stderr appended to `output` when given (else this process's)."""
    if output is None:
        return subprocess.Popen(list(argv), env=env, stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=_die_with_parent() if die_with_parent else None)
    with open(output, "ab") as out:  # the child holds its own copy of the descriptor
        return subprocess.Popen(list(argv), env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=_die_with_parent() if die_with_parent else None)


def exited(child: subprocess.Popen[bytes]) -> bool:
    """Whether the child has exited, without reaping it."""
    if child.returncode is not None:
        return True
    if not hasattr(os, "waitid"):  # macOS before Python 3.13: reap, then
        return child.poll() is not None
    try:
        return os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None
    except ChildProcessError:  # reaped already
        return True


def kill_group(child: subprocess.Popen[bytes]) -> None:
    """SIGKILL to the child's whole process group (what is left of it)."""
    try:
        os.killpg(child.pid, signal.SIGKILL)  # started in a new session: its pid is its group's id
    except (ProcessLookupError, PermissionError):
        pass


def reap(child: subprocess.Popen[bytes]) -> int:
    """For a child that has exited: what is left of its group killed, then the child reaped; its
    exit status (negative: the signal that ended it)."""
    if child.returncode is None:
        kill_group(child)
    return child.wait()


def restarting(child: subprocess.Popen[bytes]) -> bool:
    """For a child that has exited: whether it asked to be started again (RESTART_EXIT, after a
    deploy). Such a child is reaped here, what is left of its group killed first."""
    if child.returncode is None:
        try:
            status = os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
        except ChildProcessError:
            status = None
        if status is None or status.si_code != os.CLD_EXITED or status.si_status != RESTART_EXIT:
            return False
        reap(child)
    return child.returncode == RESTART_EXIT


class Flag:
    """A lock-free flag, safe to set from a signal handler."""

    def __init__(self) -> None:
        self.value = False

    def set(self) -> None:
        self.value = True

    def is_set(self) -> bool:
        return self.value


def stop(children: Sequence[subprocess.Popen[bytes]], *, grace: float,
         now: Flag | None = None) -> list[subprocess.Popen[bytes]]:
    """SIGTERM each child, wait up to `grace` s (or until `now` is set) for all of them, SIGKILL
    each child's whole process group (what is left of it), reap them. Answers the children that
    had not exited when the wait ended (they were killed)."""
    for child in children:
        if not exited(child):
            try:
                os.kill(child.pid, signal.SIGTERM)  # not Popen.send_signal: it may reap the child
            except ProcessLookupError:
                pass
    ends = time.monotonic() + grace
    while not all(exited(child) for child in children) and time.monotonic() < ends:
        if now is not None and now.is_set():
            break
        time.sleep(0.05)
    killed = [child for child in children if not exited(child)]
    for child in children:
        kill_group(child)  # stragglers of a clean exit, or everything after the grace period
    for child in children:
        child.wait()
    return killed


class StopSignals:
    """Notes SIGTERM, SIGINT and SIGHUP instead of dying; a second one sets `again` ("kill now").

    The handler only appends to a list and sets a flag: no locks (a `threading.Event.set()` in a
    handler can deadlock against the main thread's own `wait()`). `restore()` puts the previous
    handlers back."""

    def __init__(self) -> None:
        self.received: list[str] = []
        self.again = Flag()
        self._previous = {signum: signal.signal(signum, self._note) for signum in STOP_SIGNALS}

    def _note(self, signum: int, frame: FrameType | None) -> None:
        if self.received:
            self.again.set()
        self.received.append(signal.Signals(signum).name)

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)


__all__ = ["STOP_SIGNALS", "Flag", "StopSignals", "exited", "kill_group", "reap", "restarting", "start", "stop"]
