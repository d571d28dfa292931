"""The live config root as a git working tree: where it is, what revision it runs, and moving it to
another revision (the `sanoma.local` host's deploy).

The root must be the top of its working tree: deploying checks the whole tree out, so a root that
is a folder inside a larger repository (as the example company is inside this project) is never
moved. Every git call has a timeout and its stderr in the error.
"""
from __future__ import annotations

from pathlib import Path

from django.conf import settings

from changes.lifecycle.errors import RemoteCode
from changes.lifecycle.remotes.repository import run_git
from connectors.errors import DriverError, ErrorCode, RemoteError

GIT_TIMEOUT = 120.0


def git(*args: str, cwd: Path | str, timeout: float = GIT_TIMEOUT, check: bool = True) -> str:
    """`git <args>` in `cwd` (the repository may be in a folder above it): its stdout, stripped. A
    failure is a `RemoteError` with git's own words; with `check=False` any exit status answers."""
    done = run_git(args, Path(cwd), timeout=timeout, contained=False, ok=(0,) if check else range(256))
    return done.stdout.decode("utf-8", "replace").strip()


def work_tree_top(root: Path | str) -> Path | None:
    """The top of the git working tree `root` is in, or None (not in one, or git is missing)."""
    try:
        top = git("rev-parse", "--show-toplevel", cwd=root, check=True)
    except (DriverError, OSError):
        return None
    return Path(top).resolve() if top else None


def check_deployable(root: Path | str) -> Path:
    """`root` when it is the top of a git working tree; else a clear refusal saying why."""
    path = Path(root).resolve()
    if not path.is_dir():
        raise RemoteError(f"the live config root {path} is not a folder", code=ErrorCode.INVALID_INPUT)
    top = work_tree_top(path)
    if top is None:
        raise RemoteError(f"the live config root {path} is not a git working tree: run `git init` there (./demo "
                          "does it for the example company)", code=ErrorCode.INVALID_INPUT)
    if top != path:
        raise RemoteError(f"the live config root {path} is a folder inside the git working tree {top}: a deploy "
                          "checks out the whole tree, so the root must be the top of its own repository",
                          code=ErrorCode.INVALID_INPUT)
    return path


def head(root: Path) -> str:
    """The commit the live root (as `check_deployable` answered it) has checked out."""
    return git("rev-parse", "HEAD", cwd=root)


def current_branch(root: Path) -> str:
    """The branch the live root (as `check_deployable` answered it) is on ("" when detached)."""
    return git("symbolic-ref", "--quiet", "--short", "HEAD", cwd=root, check=False)


def repo_url(root: Path | str | None = None) -> str:
    """The repository changes are merged into: SANOMA_REPO_URL, else the live root's remote `origin`."""
    configured = str(getattr(settings, "SANOMA_REPO_URL", "") or "")
    if configured:
        return configured
    where = Path(root or settings.SANOMA_ROOT)
    if work_tree_top(where) is None:
        return ""
    return git("remote", "get-url", "origin", cwd=where, check=False)


def uncommitted(root: Path | str) -> list[str]:
    """Tracked files changed in the live root and not committed: a deploy would lose them."""
    out = git("status", "--porcelain", "--untracked-files=no", cwd=root)
    return sorted(line[3:] for line in out.splitlines() if line.strip())


def check_out(root: Path | str, *, url: str, branch: str, revision: str) -> str:
    """Move the live root to `revision` of `branch` fetched from `url`; answers the revision now
    checked out. Refuses, changing nothing, when the root has uncommitted changes to tracked files
    or the branch at the remote does not contain `revision`."""
    path = check_deployable(root)
    if head(path) == revision and current_branch(path) == branch:
        return revision  # a retried deploy: already there
    dirty = uncommitted(path)
    if dirty:
        raise RemoteError(f"the live root {path} has uncommitted changes to {', '.join(dirty[:5])}"
                          f"{' ...' if len(dirty) > 5 else ''}: commit or discard them before a deploy",
                          code=ErrorCode.INVALID_INPUT, data={"files": dirty})
    git("fetch", "--quiet", url, f"refs/heads/{branch}", cwd=path)
    fetched = git("rev-parse", "FETCH_HEAD", cwd=path)
    contains = run_git(["merge-base", "--is-ancestor", revision, fetched], path, ok=(0, 1), timeout=GIT_TIMEOUT,
                       contained=False).returncode == 0
    if not contains:
        raise RemoteError(f"{branch} at {url} (now {fetched[:12]}) does not contain {revision[:12]}: nothing was "
                          "checked out", code=RemoteCode.HEAD_CHANGED, data={"expected": revision, "found": fetched})
    git("checkout", "--quiet", "-B", branch, revision, cwd=path)
    return git("rev-parse", "HEAD", cwd=path)


__all__ = ["check_deployable", "check_out", "current_branch", "git", "head", "repo_url", "uncommitted",
           "work_tree_top"]
