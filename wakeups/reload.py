"""`manage.py worker --reload`: a worker started again whenever the config root changes, as
`runserver` does for the web code.

The parent process holds no cluster and opens no database connection: it starts `manage.py worker
--promote` as a child, then looks at the config root every POLL_SECONDS (the modification time and
size of every file it could load: code, policies, data, schemas). When something changed it stops
the child as the supervisor does (SIGTERM, its process group killed after the grace period) and
starts another on the new code; that one deploys at its start (its banner says which runs it
migrated or pinned) and, promoted, takes the new runs. A child that exits on its own is started
again at once when it asks to be (a deploy's restart, RESTART_EXIT); otherwise the parent says so
and waits for the next change (a typo in a workflow is fixed by saving the file again).

Polling, not inotify: nothing to install, and a config root is a few hundred files at most (one
look costs well under a millisecond per hundred files).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from runs import children
from runs.worker_lifecycle import RESTART_EXIT

POLL_SECONDS = 0.5
# What a config root's code and data are made of: a change to any of these can change a version.
WATCHED_SUFFIXES = frozenset({".py", ".cedar", ".cedarschema", ".json", ".yaml", ".yml", ".toml", ".csv",
                              ".txt", ".md", ".html", ".sql", ".cfg", ".ini"})
SKIPPED_DIRS = frozenset({"__pycache__", ".git", ".venv", "node_modules", ".mypy_cache", ".pytest_cache",
                          ".ruff_cache"})

Snapshot = dict[str, tuple[int, int]]


def snapshot(root: Path, *, skip: Collection[Path] = ()) -> Snapshot:
    """{path relative to root: (mtime in ns, size)} of every watched file under `root`, outside
    the folders in `skip` (the var folder, when it lies inside the root) and hidden folders."""
    skipped = {p.resolve() for p in skip}
    found: Snapshot = {}
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = [d for d in dirs
                   if d not in SKIPPED_DIRS and not d.startswith(".") and (here / d).resolve() not in skipped]
        for name in files:
            if Path(name).suffix not in WATCHED_SUFFIXES:
                continue
            path = here / name
            try:
                stat = path.stat()
            except OSError:  # removed between the listing and the look
                continue
            found[str(path.relative_to(root))] = (stat.st_mtime_ns, stat.st_size)
    return found


def changes(before: Snapshot, after: Snapshot) -> list[str]:
    """The files added, removed or modified between two snapshots, sorted."""
    return sorted({name for name in before.keys() | after.keys() if before.get(name) != after.get(name)})


def describe(changed: Sequence[str]) -> str:
    shown = ", ".join(changed[:3])
    return shown + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")


@dataclass
class Reloader:
    """The parent of `worker --reload`: `run()` until a stop signal or `for_seconds`."""

    root: Path
    argv: list[str]  # the child worker's command line
    say: Callable[[str], None]
    warn: Callable[[str], None]
    grace: float  # how long a child has to stop after SIGTERM
    skip: Collection[Path] = ()
    for_seconds: float | None = None
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    child: subprocess.Popen[bytes] | None = None
    starts: int = 0

    def start(self, why: str) -> None:
        self.child = children.start(self.argv, env=self.env)
        self.starts += 1
        self.say(f"worker --reload: worker {self.child.pid} started ({why}); watching {self.root}")

    def run(self) -> int:
        signals = children.StopSignals()
        ends = time.monotonic() + self.for_seconds if self.for_seconds else None
        seen = snapshot(self.root, skip=self.skip)
        try:
            self.start("first start")
            while not signals.received and (ends is None or time.monotonic() < ends):
                time.sleep(POLL_SECONDS)  # a signal's handler only notes it: seen on the next turn
                now = snapshot(self.root, skip=self.skip)
                changed = changes(seen, now)
                seen = now
                if changed:
                    if self.child is not None:
                        self.say(f"worker --reload: {describe(changed)} changed; stopping worker {self.child.pid} "
                                 "to start it again on the new code")
                        children.stop([self.child], grace=self.grace, now=signals.again)
                    if not signals.received:
                        self.start(f"{describe(changed)} changed")
                    continue
                if self.child is not None and children.exited(self.child):
                    code = children.reap(self.child)
                    self.child = None
                    if code == RESTART_EXIT:
                        self.start("it asked to start again on new code")
                    else:
                        self.warn(f"worker --reload: the worker exited with status {code}; waiting for a change "
                                  f"under {self.root} to start it again")
        finally:
            if self.child is not None:
                children.stop([self.child], grace=self.grace, now=signals.again)
                self.child = None
            signals.restore()
            self.say("worker --reload stopped")
        return 0


def child_argv(*, manage: Path) -> list[str]:
    """The command line of the worker `--reload` starts: promoted, so that an edit's version is the
    latest at once (an edit undone makes the older version latest again)."""
    return [sys.executable, str(manage), "worker", "--promote"]
