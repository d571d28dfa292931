"""On-demand workers for pinned deploy versions: old code from the repository's own history, not
an old fleet kept alive.

A deploy version that holds pinned runs (runs.version_states) needs a worker only while one of
them is runnable: queued, due to wake, or left by a dead worker. Then the supervisor (and the
demo's supervisor) starts `manage.py worker --pinned VERSION --stop-when-idle` for it, with
SANOMA_ROOT in a git worktree of the commit the version was deployed from:
`$SANOMA_VAR_DIR/versions/<commit>` (made with `git worktree add --detach` from the repository that
holds the version's recorded root; the config root sits inside it at the same relative path), and
without SANOMA_APP_VERSION, so the tree resolves to its own versions. The worker stops when its
pinned runs are idle; the next runnable one starts it again.

A version with no commit (deployed from uncommitted changes, or from outside git) never gets a
worker and is not tried again: its row's `worker_error` says so (runs.versions.UNCOMMITTED, written
by its deploy, or NO_COMMIT). Whatever else keeps a worker from starting (a root no longer in a
git repository, a worktree git refuses, a worker that exits with an error) is written on the
version's row (`worker_error`, shown on the desk's Versions page) and tried again after
RETRY_SECONDS; nothing here raises into the supervisor. A version no unfinished run needs any
more is retired: `retired_at` set, its `worker_error` cleared and its worktree removed (`git
worktree remove --force`, then `git worktree prune`), unless another version still in use was deployed from the same
commit.

The worker's own output goes to `$SANOMA_VAR_DIR/versions/<commit>.log`; the last line of a failed
start is what `worker_error` says.
"""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import connections, transaction

from runs import children
from runs.engine import clock
from runs.models import AppVersion
from runs.version_states import DeployVersion, VersionState, deploy_versions
from runs.worker_lifecycle import RESTART_EXIT

log = logging.getLogger("sanoma.fleet")

VERSIONS_DIR = "versions"
LOOK_SECONDS = 1.0  # how often the fleet looks while a pinned version exists or one of its workers runs
QUIET_SECONDS = 30.0  # with none: how often it looks for a version to retire
RETRY_SECONDS = 60.0  # a version whose worker could not start is tried again after this long
GAP_SECONDS = 3.0  # the least time between two starts of one version's worker (no tight restart loop)
LEAD = timedelta(seconds=5)  # a sleeping pinned run's worker starts this long before its wake time
GRACE = 30.0
GIT_SECONDS = 120.0
NO_COMMIT = ("no commit was recorded for this version (its config root was not in a git repository when it was "
             "deployed), so no worker can be started for it; runs pinned here can only be migrated (a patch "
             "marker), forked or cancelled")


class CodeUnavailable(Exception):
    """Why a version's code cannot be checked out, in words (what `worker_error` says)."""


def versions_dir() -> Path:
    return Path(settings.VAR_DIR) / VERSIONS_DIR


def worktree_of(commit: str) -> Path:
    return versions_dir() / commit


def _git(cwd: Path, *args: str) -> str:
    """git's answer (stripped stdout); CodeUnavailable with git's own message when it fails."""
    try:
        done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, timeout=GIT_SECONDS,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise CodeUnavailable("git is not installed on this machine") from None
    except subprocess.TimeoutExpired:
        raise CodeUnavailable(f"git {' '.join(args)} took longer than {GIT_SECONDS:g} s") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise CodeUnavailable(f"git {' '.join(args)} failed: {said[-1] if said else f'exit {done.returncode}'}")
    return done.stdout.strip()


def _repository(root: str, *, commit: str) -> tuple[Path, str]:
    """The top of the repository holding `root`, and root's path inside it."""
    if not commit:
        raise CodeUnavailable(NO_COMMIT)
    folder = Path(root) if root else None
    if folder is None or not folder.is_dir():
        raise CodeUnavailable(f"its config root {root or '(none recorded)'} is not a folder on this machine")
    try:
        top = _git(folder, "rev-parse", "--show-toplevel")
    except CodeUnavailable:
        raise CodeUnavailable(f"its config root {root} is not in a git repository any more") from None
    prefix = _git(folder, "rev-parse", "--show-prefix")
    return Path(top), prefix


def checkout(*, commit: str, root: str) -> Path:
    """The config root inside the worktree of `commit` (made if missing); CodeUnavailable, saying
    why, when it cannot be."""
    top, prefix = _repository(root, commit=commit)
    dest = worktree_of(commit)
    if (dest / ".git").exists():
        if _git(dest, "rev-parse", "HEAD") == _git(top, "rev-parse", f"{commit}^{{commit}}"):
            return dest / prefix
        raise CodeUnavailable(f"{dest} holds another commit than {commit}; remove it (git worktree remove)")
    if not _exists(top, commit):
        raise CodeUnavailable(f"commit {commit} is not in the repository {top} (history rewritten, or a shallow "
                              "clone?)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    _git(top, "worktree", "prune")  # a worktree folder removed by hand must not block adding it again
    _git(top, "worktree", "add", "--detach", str(dest), commit)
    tree = dest / prefix
    if not tree.is_dir():
        raise CodeUnavailable(f"commit {commit} has no folder {prefix or '.'} (the config root)")
    return tree


def _exists(top: Path, commit: str) -> bool:
    try:
        _git(top, "cat-file", "-e", f"{commit}^{{commit}}")
    except CodeUnavailable:
        return False
    return True


def remove_checkout(*, commit: str, root: str) -> None:
    """The worktree of `commit` removed and git's record of it pruned; a folder git no longer knows
    is deleted as it is."""
    dest = worktree_of(commit)
    try:
        top, _prefix = _repository(root, commit=commit)
    except CodeUnavailable:
        top = None
    if top is not None and dest.exists():
        try:
            _git(top, "worktree", "remove", "--force", str(dest))
        except CodeUnavailable as err:
            log.warning("removing the worktree %s failed: %s; deleting the folder", dest, err)
    if dest.exists():
        shutil.rmtree(dest, ignore_errors=True)
    if top is not None:
        try:
            _git(top, "worktree", "prune")
        except CodeUnavailable as err:
            log.warning("git worktree prune failed: %s", err)


def record_worker_error(*, version: str, error: str) -> None:
    """Say on the version's row why its worker could not start ('' once it could)."""
    with transaction.atomic():
        AppVersion.objects.filter(version=version).exclude(worker_error=error).update(worker_error=error)


def retire(*, version: DeployVersion, others: list[DeployVersion]) -> bool:
    """Retire a version no unfinished run needs: its worktree removed (unless a version still in
    use shares the commit), then `retired_at` set, so a retired version has no worktree left. Only
    once: the UPDATE holds `retired_at IS NULL`. Whether this call retired it."""
    shared = any(o.commit == version.commit and o.version != version.version
                 and o.state in (VersionState.LIVE, VersionState.PINNED_ONLY) for o in others)
    if version.commit and not shared:
        remove_checkout(commit=version.commit, root=version.root)
    with transaction.atomic():
        retired = AppVersion.objects.filter(version=version.version, retired_at__isnull=True).update(
            retired_at=clock.now(), worker_error="") == 1  # a retired version needs no worker: no problem left
    if retired:
        log.info("version %s retired: no unfinished run needs it", version.version)
    return retired


def unretire(*, version: str) -> None:
    """A retired version that holds runs again (the latest was rolled back past it) is in use."""
    with transaction.atomic():
        AppVersion.objects.filter(version=version, retired_at__isnull=False).update(retired_at=None)


@dataclass
class PinnedWorker:
    version: str
    process: subprocess.Popen[bytes]
    output: Path
    started: float


def last_line(path: Path) -> str:
    """The last line the worker wrote that says something (its error, when it failed)."""
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines()[-40:] if line.strip()]
    except OSError:
        return ""
    errors = [line for line in lines if "Error" in line or "cannot" in line or "refuse" in line]
    return (errors or lines or [""])[-1]


@dataclass
class Fleet:
    """The on-demand workers of pinned versions, tended by `tend()` on each turn of the supervisor's
    loop (it looks at the database at most every LOOK_SECONDS)."""

    say: Callable[[str], None] = log.info
    manage: Path = field(default_factory=lambda: Path(settings.BASE_DIR) / "manage.py")
    running: dict[str, PinnedWorker] = field(default_factory=dict)
    not_before: dict[str, float] = field(default_factory=dict)  # version -> when it may be started again
    next_look: float = 0.0
    pinned: int = 0  # the pinned versions seen at the last look

    def tend(self, *, quick: bool) -> None:
        """Reap the workers that stopped, start one for each pinned version with a runnable run,
        retire the versions nothing needs. Never raises: a failure is logged and looked at again.

        It looks every LOOK_SECONDS while `quick` (the caller cannot hear a run become runnable: no
        LISTEN, or its main worker is up and its notes wait) or a pinned worker runs; else every
        QUIET_SECONDS, sooner for a pinned run's wake time or when `poke()`d."""
        now = time.monotonic()
        self._reap()
        if now < self.next_look:
            return
        due: float | None = None
        try:
            due = self._look()
        except Exception:
            log.exception("tending the pinned versions' workers failed; trying again")
            connections.close_all()
        self.next_look = time.monotonic() + (LOOK_SECONDS if quick or self.running else QUIET_SECONDS)
        if due is not None:
            self.next_look = min(self.next_look, due)

    def poke(self) -> None:
        """Look at the next `tend()` (a run became runnable somewhere)."""
        self.next_look = 0.0

    def wait_hint(self) -> float:
        """How long the supervisor may wait before the fleet wants to look again."""
        return max(self.next_look - time.monotonic(), 0.0)

    def stop(self) -> None:
        """Stop every pinned worker (SIGTERM, its group killed after GRACE)."""
        if not self.running:
            return
        killed = children.stop([w.process for w in self.running.values()], grace=GRACE)
        for worker in killed:
            log.warning("pinned worker %s did not stop within %g s of SIGTERM: killed it", worker.pid, GRACE)
        self.running.clear()

    def _look(self) -> float | None:
        """One look; when (time.monotonic()) a pinned run's wake time needs the next one, if any."""
        versions = deploy_versions(lead=LEAD)
        due: float | None = None
        self.pinned = 0
        for version in versions:
            if version.state is VersionState.PINNED_ONLY:
                self.pinned += 1
                if version.retired_at is not None:
                    unretire(version=version.version)
                if version.next_wake is not None:  # look again in time for its next sleeper
                    until = (version.next_wake - LEAD - clock.now()).total_seconds()
                    at = time.monotonic() + max(until, 0.0)
                    due = at if due is None else min(due, at)
                if not version.commit:
                    self._no_commit(version)
                elif version.runnable and version.version not in self.running:
                    self._start(version)
            elif version.state is VersionState.UNUSED and version.version not in self.running:
                retire(version=version, others=versions)
        return due

    def _no_commit(self, version: DeployVersion) -> None:
        """A version with no commit never gets a worker: say so on its row once (keeping what its
        deploy wrote there, e.g. runs.versions.UNCOMMITTED), never try again."""
        if not version.worker_error:
            record_worker_error(version=version.version, error=NO_COMMIT)

    def _start(self, version: DeployVersion) -> None:
        if time.monotonic() < self.not_before.get(version.version, 0.0):
            return
        try:
            tree = checkout(commit=version.commit, root=version.root)
        except CodeUnavailable as err:
            self._failed(version.version, str(err))
            return
        env = dict(os.environ)
        env["SANOMA_ROOT"] = str(tree)
        env.pop("SANOMA_APP_VERSION", None)  # the tree resolves to its own versions
        output = versions_dir() / f"{version.commit}.log"
        process = children.start([sys.executable, str(self.manage), "worker", "--pinned", version.version,
                                  "--stop-when-idle"], env=env, output=output)
        self.running[version.version] = PinnedWorker(version=version.version, process=process, output=output,
                                                     started=time.monotonic())
        self.not_before[version.version] = time.monotonic() + GAP_SECONDS
        self.say(f"pinned worker {process.pid} started for {version.version} (commit {version.commit[:12]}): "
                 f"{version.runnable} runnable of {version.unfinished} pinned run(s)")

    def _reap(self) -> None:
        for version, worker in list(self.running.items()):
            if not children.exited(worker.process):
                continue
            code = children.reap(worker.process)
            del self.running[version]
            if code in (0, RESTART_EXIT):
                self.say(f"pinned worker {worker.process.pid} for {version} stopped (idle)")
                try:
                    record_worker_error(version=version, error="")
                except Exception:
                    log.exception("clearing the worker error of %s failed", version)
                continue
            said = last_line(worker.output)
            self._failed(version, f"its worker exited with status {code}: {said or 'no output'} (see {worker.output})")

    def _failed(self, version: str, error: str) -> None:
        log.warning("no worker for pinned version %s: %s; trying again in %g s", version, error, RETRY_SECONDS)
        self.not_before[version] = time.monotonic() + RETRY_SECONDS
        try:
            record_worker_error(version=version, error=error)
        except Exception:
            log.exception("recording the worker error of %s failed", version)
            connections.close_all()
