"""A git repository on this machine, driven through the `git` command: what the embedded remote
(`changes.lifecycle.remotes.git`) and the setup helpers (`changes.lifecycle.remotes.git_setup`) use.

Every git command has a timeout, never prompts (`GIT_TERMINAL_PROMPT=0`), ignores the git
environment of a hook it may run under (`GIT_DIR`, ...), and commits as `sanoma <sanoma@localhost>`
unless `SANOMA_GIT_AUTHOR_NAME` / `SANOMA_GIT_AUTHOR_EMAIL` say otherwise. A failing command is a
`RemoteError` (`driver_failed`) whose message ends with git's own words. Merges into a repository are
serialized by an exclusive lock in its git directory (`Repository.lock`, `sanoma-merge.lock`).
"""
from __future__ import annotations

import errno
import fcntl
import os
import re
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from changes.lifecycle.errors import RemoteCode
from connectors.errors import ErrorCode, RemoteError

GIT_TIMEOUT_SECONDS = 60.0  # one git command
LOCK_TIMEOUT_SECONDS = 60.0  # waiting for another merge into the same repository
LOCK_FILE = "sanoma-merge.lock"  # in the repository's (common) git directory
MAX_LISTED = 10  # branches named in a branch_not_found message

_SHA = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
# What `git rev-parse --local-env-vars` lists (git 2.39), and what a hook runs with: a command run
# from a hook must find the repository it is pointed at, not the one pushed into.
GIT_LOCAL_ENV = ("GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
                  "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE",
                  "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX",
                  "GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE", "GIT_COMMON_DIR", "GIT_QUARANTINE_PATH",
                  "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_NAMESPACE")


def committer() -> tuple[str, str]:
    """The name and email merge commits (and the demo's first commit) are made as."""
    name = (os.environ.get("SANOMA_GIT_AUTHOR_NAME") or "").strip() or "sanoma"
    email = (os.environ.get("SANOMA_GIT_AUTHOR_EMAIL") or "").strip() or "sanoma@localhost"
    return name, email


def git_env(cwd: Path, contained: bool = True) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in GIT_LOCAL_ENV}
    name, email = committer()
    env.update(GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="", SSH_ASKPASS="", LC_ALL="C", LANGUAGE="C",
               GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email, GIT_COMMITTER_NAME=name, GIT_COMMITTER_EMAIL=email,
               )
    if contained:  # git looks for the repository in `cwd` itself, never in a folder above it
        env["GIT_CEILING_DIRECTORIES"] = str(cwd.parent)
    return env


def text_of(data: bytes) -> str:
    return data.decode("utf-8", "replace").strip()


def run_git(args: Sequence[str], cwd: Path, *, input: bytes | None = None, ok: Sequence[int] = (0,),
            timeout: float = GIT_TIMEOUT_SECONDS, what: str = "", contained: bool = True
            ) -> subprocess.CompletedProcess[bytes]:
    """`git <args>` in `cwd`; an exit status outside `ok`, or no answer within `timeout` seconds, is
    a `RemoteError` (`driver_failed`) carrying git's stderr. `contained=False` lets git find the
    repository in a folder above `cwd` (to tell that `cwd` is inside one)."""
    cmd = ["git", *args]
    label = what or f"git {' '.join(args[:2])}"
    try:
        done = subprocess.run(cmd, cwd=cwd, env=git_env(cwd, contained), input=input, capture_output=True,
                              timeout=timeout, stdin=None if input is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired as err:
        raise RemoteError(f"{label} in {cwd} did not finish within {timeout:g}s", retryable=True,
                          data={"command": cmd}, cause=err) from err
    except OSError as err:
        raise RemoteError(f"{label} in {cwd} could not start: {err}", data={"command": cmd}, cause=err) from err
    if done.returncode not in ok:
        stderr = text_of(done.stderr) or text_of(done.stdout) or f"exit status {done.returncode}"
        # another git process holding a ref or the index: trying again may well succeed
        retryable = ".lock" in stderr or "cannot lock ref" in stderr
        raise RemoteError(f"{label} failed in {cwd}: {stderr}", retryable=retryable,
                          data={"command": cmd, "exit_status": done.returncode, "stderr": stderr})
    return done


def repository_path(url: str) -> Path | None:
    """The folder an absolute path or a `file://` URL names (no check that it exists), else None."""
    if not isinstance(url, str) or not url:
        return None
    if url.startswith("file:"):
        parts = urlsplit(url)
        if parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
            return None
        path = unquote(parts.path)
        return Path(path) if path.startswith("/") else None
    return Path(url) if os.path.isabs(url) else None


def is_repository(path: Path) -> bool:
    """Whether the folder itself is a git repository: a working tree (`.git` in it) or a bare one
    (`HEAD`, `objects/` and `refs/`). A folder inside a working tree is not."""
    try:
        if not path.is_dir():
            return False
        if (path / ".git").exists():
            return True
        return (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir()
    except OSError:
        return False


def check_sha(sha: object, what: str = "sha") -> str:
    if not isinstance(sha, str) or not _SHA.match(sha.strip().lower()):
        raise RemoteError(f"the {what} must be a full commit sha (40 hexadecimal digits); got {sha!r}",
                          code=ErrorCode.INVALID_INPUT, data={what: sha if isinstance(sha, str) else repr(sha)})
    return sha.strip().lower()


@dataclass(frozen=True)
class Worktree:
    path: Path
    branch: str | None  # the branch checked out there (`refs/heads/...`), None when detached
    bare: bool


class Repository:
    """One git repository on this machine, every command run in its folder."""

    def __init__(self, path: Path, *, timeout: float = GIT_TIMEOUT_SECONDS, url: str | None = None) -> None:
        self.path = Path(os.path.realpath(path))
        self.url = url or str(path)
        self.timeout = timeout

    def git(self, *args: str, input: bytes | None = None, ok: Sequence[int] = (0,),
            cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
        return run_git(args, cwd or self.path, input=input, ok=ok, timeout=self.timeout)

    def out(self, *args: str) -> str:
        return text_of(self.git(*args).stdout)

    # -- names and commits ------------------------------------------------------------------------

    def check_branch_name(self, name: object, what: str = "branch") -> str:
        """`git check-ref-format --branch`, and nothing it would expand (`@{-1}`) or that is not a name."""
        if not isinstance(name, str) or not name or name.startswith("-") or name == "HEAD" \
                or any(c.isspace() or ord(c) < 32 for c in name):
            raise RemoteError(f"{name!r} is not a valid {what} name", code=ErrorCode.INVALID_INPUT,
                              data={what: name if isinstance(name, str) else repr(name)})
        done = run_git(["check-ref-format", "--branch", name], self.path, ok=(0, 1, 128), timeout=self.timeout)
        if done.returncode != 0 or text_of(done.stdout) != name:
            reason = text_of(done.stderr).removeprefix("fatal: ")
            raise RemoteError(f"{name!r} is not a valid {what} name" + (f" ({reason})" if reason else ""),
                              code=ErrorCode.INVALID_INPUT, data={what: name})
        return name

    def rev(self, branch: str) -> str | None:
        """The commit `refs/heads/<branch>` points at, None when there is no such branch."""
        done = self.git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}", ok=(0, 1))
        return text_of(done.stdout) if done.returncode == 0 else None

    def has_commit(self, sha: str) -> bool:
        done = self.git("rev-parse", "--verify", "--quiet", f"{sha}^{{commit}}", ok=(0, 1))
        return done.returncode == 0

    def is_ancestor(self, ancestor: str, of: str) -> bool:
        """Whether commit `of` contains commit `ancestor` (both must exist)."""
        return self.git("merge-base", "--is-ancestor", ancestor, of, ok=(0, 1)).returncode == 0

    def merged_by(self, head: str, base_sha: str) -> tuple[str, bool]:
        """The commit of the base that merged `head` (which the base contains): the oldest commit on
        the base's first-parent line descending from `head` is a merge commit bringing it in, unless
        its first parent is `head` itself (then `head` came by a fast-forward). (commit, fast-forward)"""
        if head == base_sha:
            return head, True
        line = self.out("rev-list", "--first-parent", "--ancestry-path", f"{head}..{base_sha}").split()
        if not line:
            return base_sha, False
        parents = self.out("rev-list", "--parents", "-n", "1", line[-1]).split()[1:]
        return (head, True) if parents[:1] == [head] else (line[-1], False)

    def branches(self) -> list[str]:
        return self.out("for-each-ref", "--format=%(refname:lstrip=2)", "refs/heads/").splitlines()

    def need(self, branch: str, *, what: str = "branch") -> str:
        """The branch's commit; no such branch is `branch_not_found` listing the branches there are."""
        sha = self.rev(branch)
        if sha is None:
            names = self.branches()
            listed = ", ".join(names[:MAX_LISTED]) + (f" and {len(names) - MAX_LISTED} more"
                                                      if len(names) > MAX_LISTED else "")
            raise RemoteError(f"the repository {self.url} has no {what} '{branch}' (its branches: "
                              f"{listed or 'none'})", code=RemoteCode.BRANCH_NOT_FOUND,
                              data={"branch": branch, "branches": names[:MAX_LISTED], "url": self.url})
        return sha

    def merge_tree(self, base_sha: str, head_sha: str) -> tuple[str | None, list[str]]:
        """The merged tree of two commits, as `git merge` would make it, written as objects only (no
        index, no working tree): (tree, []) when clean, (None, conflicted paths sorted) when not."""
        done = self.git("merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", base_sha, head_sha,
                        ok=(0, 1, 128))
        if done.returncode == 128:
            stderr = text_of(done.stderr)
            if "unrelated histories" in stderr:
                raise RemoteError(f"the branch and the base of {self.url} have no commit in common: they "
                                  "cannot be merged", code=RemoteCode.NOT_MERGEABLE,
                                  data={"base_sha": base_sha, "head_sha": head_sha})
            raise RemoteError(f"git merge-tree failed in {self.path}: {stderr}",
                              data={"stderr": stderr, "exit_status": done.returncode})
        fields = done.stdout.split(b"\0")
        tree = fields[0].decode()
        if done.returncode == 0:
            return tree, []
        return None, sorted({os.fsdecode(f) for f in fields[1:] if f})

    # -- where things live ------------------------------------------------------------------------

    def common_dir(self) -> Path:
        if (self.path / ".git").is_dir():
            return self.path / ".git"
        if not (self.path / ".git").exists():
            return self.path  # a bare repository is its own git directory
        common = Path(self.out("rev-parse", "--git-common-dir"))  # a linked working tree
        return Path(os.path.realpath(common if common.is_absolute() else self.path / common))

    def hooks_dir(self) -> Path:
        hooks = Path(self.out("rev-parse", "--git-path", "hooks"))
        return hooks if hooks.is_absolute() else self.path / hooks

    def worktrees(self) -> list[Worktree]:
        found: list[Worktree] = []
        for block in self.git("worktree", "list", "--porcelain", "-z").stdout.split(b"\0\0"):
            path: Path | None = None
            branch: str | None = None
            bare = False
            for line in block.split(b"\0"):
                key, _, value = os.fsdecode(line).partition(" ")
                if key == "worktree":
                    path = Path(value)
                elif key == "branch":
                    branch = value
                elif key == "bare":
                    bare = True
            if path is not None:
                found.append(Worktree(path, branch, bare))
        return found

    @contextmanager
    def lock(self, timeout: float = LOCK_TIMEOUT_SECONDS) -> Iterator[None]:
        """An exclusive lock on the repository's merges (`flock` on a file in its git directory)."""
        path = self.common_dir() / LOCK_FILE
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as err:
            raise RemoteError(f"cannot open the merge lock {path}: {err}", cause=err) from err
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as err:
                    if err.errno not in (errno.EAGAIN, errno.EACCES):
                        raise RemoteError(f"cannot take the merge lock {path}: {err}", cause=err) from err
                    if time.monotonic() >= deadline:
                        raise RemoteError(f"another merge into {self.url} held the lock {path} for more than "
                                          f"{timeout:g}s", retryable=True, data={"lock": str(path)}) from err
                    time.sleep(0.02)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock


__all__ = ["GIT_TIMEOUT_SECONDS", "LOCK_TIMEOUT_SECONDS", "Repository", "Worktree", "check_sha", "committer", "git_env",
           "is_repository", "repository_path", "run_git", "text_of"]
