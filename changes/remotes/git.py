"""The embedded git remote: a git repository on this machine (bare, or another working tree),
addressed by an absolute path or a `file://` URL, driven through the `git` command.

    remote = GitRemote()
    head = remote.resolve("/srv/company.git", branch="new-prices")
    remote.export("/srv/company.git", head.sha, Path("/tmp/checkout"))
    merged = remote.merge("/srv/company.git", branch="new-prices", head_sha=head.sha, title="New prices")

Merges never use a working tree: `git merge-tree --write-tree` (the merge `git merge` makes, written
as objects only), `git commit-tree` for a merge commit, and a compare-and-swap `git update-ref` of the
base, all under an exclusive lock in the repository's git directory (`sanoma-merge.lock`), so two
merges are serialized and a push to the base between reading it and moving it is never lost. A base
checked out in a working tree of the repository is treated as `git push` treats it
(`receive.denyCurrentBranch`): refused unless that is `updateInstead` (the clean working tree is
updated, as a push would) or `ignore`/`warn`/`false` (only the branch moves).

Every git command has a timeout, never prompts (`GIT_TERMINAL_PROMPT=0`), ignores the git
environment of a hook it may run under (`GIT_DIR`, ...), and commits as `sanoma <sanoma@localhost>`
unless `SANOMA_GIT_AUTHOR_NAME` / `SANOMA_GIT_AUTHOR_EMAIL` say otherwise. A failing command is a
`RemoteError` (`driver_failed`) whose message ends with git's own words.

Two helpers for setting a repository up: `install_hook` (a `post-receive` hook telling sanoma about
every pushed branch) and `init_embedded` (the demo's company working tree and its bare remote).
"""
from __future__ import annotations

import errno
import fcntl
import os
import re
import shlex
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from changes.remotes import diffs
from connectors.errors import ErrorCode, RemoteError
from connectors.remotes import ChangeStatus, Head, Merged

GIT_TIMEOUT_SECONDS = 60.0  # one git command
LOCK_TIMEOUT_SECONDS = 60.0  # waiting for another merge into the same repository
CAS_ATTEMPTS = 5  # a base moved by a push between reading it and moving it: merge again onto the new base
LOCK_FILE = "sanoma-merge.lock"  # in the repository's (common) git directory
HOOK_LOG = "sanoma-hook.log"  # in the repository's git directory
HOOK_MARKER = "sanoma-post-receive"
CHAINED_HOOK = "post-receive.before-sanoma"
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


def _env(cwd: Path, contained: bool = True) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in GIT_LOCAL_ENV}
    name, email = committer()
    env.update(GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="", SSH_ASKPASS="", LC_ALL="C", LANGUAGE="C",
               GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email, GIT_COMMITTER_NAME=name, GIT_COMMITTER_EMAIL=email,
               )
    if contained:  # git looks for the repository in `cwd` itself, never in a folder above it
        env["GIT_CEILING_DIRECTORIES"] = str(cwd.parent)
    return env


def _text(data: bytes) -> str:
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
        done = subprocess.run(cmd, cwd=cwd, env=_env(cwd, contained), input=input, capture_output=True, timeout=timeout,
                              stdin=None if input is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired as err:
        raise RemoteError(f"{label} in {cwd} did not finish within {timeout:g}s", retryable=True,
                          data={"command": cmd}, cause=err) from err
    except OSError as err:
        raise RemoteError(f"{label} in {cwd} could not start: {err}", data={"command": cmd}, cause=err) from err
    if done.returncode not in ok:
        stderr = _text(done.stderr) or _text(done.stdout) or f"exit status {done.returncode}"
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


def _check_sha(sha: object, what: str = "sha") -> str:
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
        return _text(self.git(*args).stdout)

    # -- names and commits ------------------------------------------------------------------------

    def check_branch_name(self, name: object, what: str = "branch") -> str:
        """`git check-ref-format --branch`, and nothing it would expand (`@{-1}`) or that is not a name."""
        if not isinstance(name, str) or not name or name.startswith("-") or name == "HEAD" \
                or any(c.isspace() or ord(c) < 32 for c in name):
            raise RemoteError(f"{name!r} is not a valid {what} name", code=ErrorCode.INVALID_INPUT,
                              data={what: name if isinstance(name, str) else repr(name)})
        done = run_git(["check-ref-format", "--branch", name], self.path, ok=(0, 1, 128), timeout=self.timeout)
        if done.returncode != 0 or _text(done.stdout) != name:
            reason = _text(done.stderr).removeprefix("fatal: ")
            raise RemoteError(f"{name!r} is not a valid {what} name" + (f" ({reason})" if reason else ""),
                              code=ErrorCode.INVALID_INPUT, data={what: name})
        return name

    def rev(self, branch: str) -> str | None:
        """The commit `refs/heads/<branch>` points at, None when there is no such branch."""
        done = self.git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}", ok=(0, 1))
        return _text(done.stdout) if done.returncode == 0 else None

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
                              f"{listed or 'none'})", code=ErrorCode.BRANCH_NOT_FOUND,
                              data={"branch": branch, "branches": names[:MAX_LISTED], "url": self.url})
        return sha

    def merge_tree(self, base_sha: str, head_sha: str) -> tuple[str | None, list[str]]:
        """The merged tree of two commits, as `git merge` would make it, written as objects only (no
        index, no working tree): (tree, []) when clean, (None, conflicted paths sorted) when not."""
        done = self.git("merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", base_sha, head_sha,
                        ok=(0, 1, 128))
        if done.returncode == 128:
            stderr = _text(done.stderr)
            if "unrelated histories" in stderr:
                raise RemoteError(f"the branch and the base of {self.url} have no commit in common: they "
                                  "cannot be merged", code=ErrorCode.NOT_MERGEABLE,
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

    def git_dir(self) -> Path:
        return Path(self.out("rev-parse", "--absolute-git-dir"))

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


class GitRemote:
    """The remote half for a git repository on this machine (`name` is "git")."""

    name = "git"

    def __init__(self, *, timeout: float = GIT_TIMEOUT_SECONDS, lock_timeout: float = LOCK_TIMEOUT_SECONDS) -> None:
        self.timeout = timeout
        self.lock_timeout = lock_timeout

    # -- the Remote protocol ----------------------------------------------------------------------

    def handles(self, url: str) -> bool:
        path = repository_path(url)
        return path is not None and is_repository(path)

    def resolve(self, url: str, *, branch: str | None = None, pull_request: str | None = None,
                base: str = "main") -> Head:
        if pull_request is not None:
            raise RemoteError(f"a git repository on this machine has no pull requests: name the branch of the change "
                              f"instead of {pull_request!r}", code=ErrorCode.INVALID_INPUT,
                              data={"pull_request": pull_request})
        if branch is None:
            raise RemoteError("resolving a change in a git repository needs its branch", code=ErrorCode.INVALID_INPUT)
        repo = self._repo(url)
        repo.check_branch_name(branch)
        repo.check_branch_name(base, "base branch")
        return Head(url=url, branch=branch, sha=repo.need(branch), base=base)

    def export(self, url: str, sha: str, dest: Path) -> None:
        repo = self._repo(url)
        sha = _check_sha(sha)
        if not repo.has_commit(sha):
            raise RemoteError(f"the repository {url} has no commit {sha}", data={"sha": sha, "url": url})
        dest = Path(dest)
        if dest.exists():
            if not dest.is_dir() or any(dest.iterdir()):
                raise RemoteError(f"{dest} must be an empty folder to export commit {sha[:12]} into",
                                  code=ErrorCode.INVALID_INPUT, data={"dest": str(dest)})
        else:
            dest.mkdir(parents=True)
        _write_tree(repo, sha, dest)

    def merge(self, url: str, *, branch: str, head_sha: str, base: str = "main", title: str = "",
              message: str = "") -> Merged:
        repo = self._repo(url)
        repo.check_branch_name(branch)
        repo.check_branch_name(base, "base branch")
        head_sha = _check_sha(head_sha, "head_sha")
        with repo.lock(self.lock_timeout):
            for _ in range(CAS_ATTEMPTS):
                base_sha = repo.need(base, what="base branch")
                # merged before (a retried merge), whatever the branch has done since: answer that merge
                if repo.has_commit(head_sha) and repo.is_ancestor(head_sha, base_sha):
                    sha, fast_forward = repo.merged_by(head_sha, base_sha)
                    return Merged(sha=sha, base=base, head_sha=head_sha, fast_forward=fast_forward, already=True)
                found = repo.need(branch)
                if found != head_sha:
                    raise RemoteError(f"the branch '{branch}' of {url} moved from {head_sha[:12]} to {found[:12]} "
                                      "since it was checked: nothing was merged", code=ErrorCode.HEAD_CHANGED,
                                      data={"expected": head_sha, "found": found, "branch": branch})
                if repo.is_ancestor(base_sha, head_sha):
                    new, fast_forward = head_sha, True
                else:
                    tree, conflicts = repo.merge_tree(base_sha, head_sha)
                    if tree is None:
                        shown = ", ".join(conflicts[:20]) + (f" and {len(conflicts) - 20} more"
                                                             if len(conflicts) > 20 else "")
                        raise RemoteError(f"the branch '{branch}' does not merge cleanly into '{base}' of {url}: "
                                          f"{len(conflicts)} file{'s' if len(conflicts) != 1 else ''} in conflict "
                                          f"({shown}); nothing was merged", code=ErrorCode.MERGE_CONFLICT,
                                          data={"files": conflicts, "branch": branch, "base": base,
                                                "head_sha": head_sha, "base_sha": base_sha})
                    text = "\n\n".join(p.strip() for p in (title, message) if p and p.strip())
                    text = (text + "\n\n" if text else "") + f"Merge branch '{branch}' ({head_sha})\n"
                    new = _text(repo.git("commit-tree", "--no-gpg-sign", tree, "-p", base_sha, "-p", head_sha,
                                         input=text.encode()).stdout)
                    fast_forward = False
                if self._move_base(repo, base, new, base_sha):
                    return Merged(sha=new, base=base, head_sha=head_sha, fast_forward=fast_forward)
                # a push moved the base between reading it and moving it: merge onto the new base
        raise RemoteError(f"the base '{base}' of {url} kept moving while '{branch}' was merged into it: nothing was "
                          "merged; try again", retryable=True, data={"branch": branch, "base": base})

    def diff(self, url: str, *, sha: str, base: str = "main") -> dict[str, Any]:
        """What merging commit `sha` brings into `base`: the changes since the two parted
        (`git diff base...sha`), as `changes.remotes.diffs.report` shapes them."""
        repo = self._repo(url)
        repo.check_branch_name(base, "base branch")
        sha = _check_sha(sha)
        if not repo.has_commit(sha):
            raise RemoteError(f"the repository {url} has no commit {sha}", data={"sha": sha, "url": url})
        base_sha = repo.need(base, what="base branch")
        parted = repo.git("merge-base", base_sha, sha, ok=(0, 1))
        if parted.returncode != 0:
            raise RemoteError(f"the commit {sha[:12]} and the base '{base}' of {url} have no commit in common",
                              code=ErrorCode.NOT_MERGEABLE, data={"base_sha": base_sha, "head_sha": sha})
        since = _text(parted.stdout)
        kinds = {"A": "added", "M": "modified", "D": "removed"}
        statuses = {}
        for line in repo.out("diff", "--name-status", "--no-renames", since, sha).splitlines():
            kind, _, path = line.partition("\t")
            statuses[path] = kinds.get(kind[:1], "changed")
        files = []
        for line in repo.out("diff", "--numstat", "--no-renames", since, sha).splitlines():
            added, removed, path = (line.split("\t", 2) + ["", ""])[:3]
            files.append({"path": path, "status": statuses.get(path, "changed"),
                          "added": int(added) if added.isdigit() else None,  # "-": a binary file
                          "removed": int(removed) if removed.isdigit() else None})
        patch = repo.git("diff", "--no-color", "--no-ext-diff", "--no-renames", since, sha).stdout
        return diffs.report(base=base, base_sha=base_sha, merge_base=since, sha=sha, files=files,
                            patch=patch.decode("utf-8", "replace"))

    def status(self, url: str, *, branch: str, base: str = "main") -> ChangeStatus:
        repo = self._repo(url)
        repo.check_branch_name(branch)
        repo.check_branch_name(base, "base branch")
        head = repo.need(branch)
        base_sha = repo.need(base, what="base branch")
        if repo.is_ancestor(head, base_sha):
            return ChangeStatus(state="merged", head_sha=head, base=base, mergeable=None)
        if repo.is_ancestor(base_sha, head):
            return ChangeStatus(state="open", head_sha=head, base=base, mergeable=True)
        try:
            tree, _ = repo.merge_tree(base_sha, head)
        except RemoteError as err:
            if err.code != ErrorCode.NOT_MERGEABLE:
                raise
            tree = None
        return ChangeStatus(state="open", head_sha=head, base=base, mergeable=tree is not None)

    # -- setting a repository up --------------------------------------------------------------------

    def install_hook(self, repo_path: Path | str, command: Sequence[str]) -> Path:
        return install_hook(repo_path, command, timeout=self.timeout)

    def init_embedded(self, root: Path, remote: Path, *, branch: str = "main") -> None:
        init_embedded(root, remote, branch=branch, timeout=self.timeout)

    # -- inside -------------------------------------------------------------------------------------

    def _repo(self, url: str) -> Repository:
        path = repository_path(url)
        if path is None:
            raise RemoteError(f"{url!r} is not an absolute path or a file:// URL of a git repository",
                              code=ErrorCode.INVALID_INPUT, data={"url": url})
        if not is_repository(path):
            raise RemoteError(f"{path} is not a git repository (a bare one, or a working tree with its .git)",
                              code=ErrorCode.INVALID_INPUT, data={"url": url})
        return Repository(path, timeout=self.timeout, url=url)

    def _move_base(self, repo: Repository, base: str, new: str, old: str) -> bool:
        """Move `refs/heads/<base>` from `old` to `new` only if it is still at `old` (False when it is
        not). A base checked out in a working tree is handled as `git push` would handle it."""
        checked_out = None
        # a bare repository without linked working trees has nothing checked out: no need to ask
        if (repo.path / ".git").exists() or (repo.path / "worktrees").is_dir():
            checked_out = next((w for w in repo.worktrees() if not w.bare and w.branch == f"refs/heads/{base}"), None)
        update_files = False
        if checked_out is not None:
            policy = _text(repo.git("config", "--get", "receive.denyCurrentBranch", ok=(0, 1)).stdout).lower()
            if policy == "updateinstead":
                update_files = True
                _check_clean(repo, checked_out.path, base)
            elif policy not in ("ignore", "warn", "false", "no", "off", "0"):
                raise RemoteError(f"the base '{base}' is checked out in the working tree {checked_out.path}: merging "
                                  "would leave its files behind the branch, so it is refused as a push would be. "
                                  f"Check out another branch there, use a bare repository, or run `git -C "
                                  f"{checked_out.path} config receive.denyCurrentBranch updateInstead` to let merges "
                                  "update its files", code=ErrorCode.NOT_MERGEABLE,
                                  data={"base": base, "worktree": str(checked_out.path)})
        if update_files and checked_out is not None:
            repo.git("read-tree", "-u", "-m", old, new, cwd=checked_out.path)
        done = repo.git("update-ref", "-m", f"sanoma: merge into {base}", f"refs/heads/{base}", new, old,
                        ok=(0, 1, 128))
        if done.returncode == 0:
            return True
        if update_files and checked_out is not None:  # put the files back where the branch still is
            repo.git("read-tree", "-u", "-m", new, old, cwd=checked_out.path, ok=(0, 1, 128))
        if repo.rev(base) != old:
            return False
        stderr = _text(done.stderr)
        raise RemoteError(f"moving '{base}' of {repo.url} to {new[:12]} failed: {stderr}",
                          retryable=".lock" in stderr, data={"stderr": stderr})


def _check_clean(repo: Repository, worktree: Path, base: str) -> None:
    """`updateInstead`'s rule: the working tree the base is checked out in has no changes."""
    repo.git("update-index", "-q", "--ignore-submodules", "--refresh", cwd=worktree, ok=(0, 1))
    dirty = repo.git("diff-files", "--quiet", "--ignore-submodules", "--", cwd=worktree, ok=(0, 1)).returncode \
        or repo.git("diff-index", "--quiet", "--cached", "--ignore-submodules", "HEAD", "--", cwd=worktree,
                    ok=(0, 1)).returncode
    if dirty:
        raise RemoteError(f"the base '{base}' is checked out in {worktree}, which has changes not committed: nothing "
                          "was merged (commit or stash them there first)", code=ErrorCode.NOT_MERGEABLE,
                          data={"base": base, "worktree": str(worktree)})


def _write_tree(repo: Repository, sha: str, dest: Path) -> None:
    """The files of commit `sha`, byte for byte as committed (no filters, no `export-ignore`), into `dest`."""
    listing = repo.git("ls-tree", "-r", "-z", "--full-tree", sha).stdout
    entries: list[tuple[str, str, str, str]] = []
    for record in listing.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, kind, oid = meta.decode().split(" ")
        path = os.fsdecode(raw_path)
        parts = path.split("/")
        if any(p in ("", ".", "..") or p.lower() == ".git" for p in parts):
            raise RemoteError(f"commit {sha[:12]} of {repo.url} holds a path git would not check out: {path!r}",
                              data={"sha": sha, "path": path})
        entries.append((mode, kind, oid, path))
    blobs = [e for e in entries if e[1] == "blob"]
    for _, kind, _, path in entries:
        if kind == "commit":  # a submodule: an empty folder, as a checkout leaves it
            (dest / path).mkdir(parents=True, exist_ok=True)
    if not blobs:
        return
    proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=repo.path, env=_env(repo.path),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    timed_out = threading.Event()

    def give_up() -> None:
        timed_out.set()
        proc.kill()

    killer = threading.Timer(repo.timeout, give_up)
    killer.start()
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for mode, _, oid, path in blobs:
            proc.stdin.write(oid.encode() + b"\n")
            proc.stdin.flush()
            header = proc.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                raise OSError(f"git cat-file could not read {path} ({oid}): "
                              f"{b' '.join(header).decode(errors='replace') or 'no answer'}")
            size = int(header[2])
            data = proc.stdout.read(size)
            if len(data) != size or proc.stdout.read(1) != b"\n":
                raise OSError(f"git cat-file stopped in the middle of {path} ({oid})")
            target = dest / path
            target.parent.mkdir(parents=True, exist_ok=True)
            if mode == "120000":
                os.symlink(os.fsdecode(data), target)
                continue
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o777 if mode == "100755" else 0o666)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
    except (OSError, ValueError) as err:
        if timed_out.is_set():
            raise RemoteError(f"exporting commit {sha[:12]} of {repo.url} did not finish within {repo.timeout:g}s",
                              retryable=True, cause=err) from err
        raise RemoteError(f"exporting commit {sha[:12]} of {repo.url} into {dest} failed: {err}",
                          data={"sha": sha}, cause=err) from err
    finally:
        killer.cancel()
        try:
            proc.stdin.close()
        except OSError:
            pass
        proc.kill()
        proc.wait()
        proc.stdout.close()


# -- the post-receive hook ------------------------------------------------------------------------------

_HOOK = """#!/bin/sh
# {marker}: installed by sanoma. For every branch a push creates or moves, it runs (in the background,
# its output and exit status appended to sanoma-hook.log in the git directory; a failure never fails
# the push):
#   {shown} --branch <branch> --sha <new commit>
# Installing again replaces this file. A hook that was here before is kept as {chained}
# and runs first, with the same input.
hooks_dir=$(cd "$(dirname "$0")" && pwd)
log="$(git rev-parse --absolute-git-dir 2>/dev/null || pwd)/{log}"
input=$(cat)
if [ -x "$hooks_dir/{chained}" ]; then
    printf '%s\\n' "$input" | "$hooks_dir/{chained}" "$@"
fi
printf '%s\\n' "$input" | while read -r old new ref; do
    case "$ref" in refs/heads/*) ;; *) continue ;; esac
    case "$new" in *[!0]*) ;; *) continue ;; esac  # a deleted branch
    branch=${{ref#refs/heads/}}
    (
        unset $(git rev-parse --local-env-vars 2>/dev/null) GIT_QUARANTINE_PATH
        {{
            echo "$(date -u '+%Y-%m-%dT%H:%M:%SZ') $branch $new: running"
            {command} --branch "$branch" --sha "$new"
            echo "$(date -u '+%Y-%m-%dT%H:%M:%SZ') $branch $new: exit status $?"
        }} </dev/null >>"$log" 2>&1 &
    )
done
exit 0
"""


def install_hook(repo_path: Path | str, command: Sequence[str], *, timeout: float = GIT_TIMEOUT_SECONDS) -> Path:
    """Write the repository's `post-receive` hook: for every pushed branch, `command --branch <name>
    --sha <new>` runs in the background (logged to `sanoma-hook.log` in the git directory; the push
    never fails because of it). A hook that was there before is kept as `post-receive.before-sanoma`
    and called first. Installing again rewrites the hook (with the new command); answers its path."""
    if isinstance(command, str) or not command or not all(isinstance(c, str) and c for c in command):
        raise RemoteError("the hook's command must be a list of non-empty strings, e.g. [python, manage.py, ...]",
                          code=ErrorCode.INVALID_INPUT, data={"command": repr(command)})
    path = Path(repo_path)
    if not is_repository(path):
        raise RemoteError(f"{path} is not a git repository: no hook installed", code=ErrorCode.INVALID_INPUT,
                          data={"repo": str(path)})
    repo = Repository(path, timeout=timeout)
    hooks = repo.hooks_dir()
    hooks.mkdir(parents=True, exist_ok=True)
    hook, chained = hooks / "post-receive", hooks / CHAINED_HOOK
    quoted = " ".join(shlex.quote(c) for c in command)
    text = _HOOK.format(marker=HOOK_MARKER, command=quoted, shown=quoted.replace("\n", " "), chained=CHAINED_HOOK,
                        log=HOOK_LOG)
    if hook.exists() or hook.is_symlink():
        current = hook.read_bytes() if hook.exists() else b""
        if current.decode("utf-8", "replace") == text:
            return hook
        if HOOK_MARKER.encode() not in current:
            if chained.exists() or chained.is_symlink():
                raise RemoteError(f"{hook} is not sanoma's, and {chained} (a hook sanoma chained before) is there "
                                  "too: merge the two into one of them by hand, then install again",
                                  code=ErrorCode.INVALID_INPUT, data={"hook": str(hook)})
            os.replace(hook, chained)
    temporary = hook.with_name(f".post-receive.sanoma-{os.getpid()}-{threading.get_ident()}")
    temporary.write_text(text)
    temporary.chmod(0o755)
    os.replace(temporary, hook)
    return hook


# -- the demo's repository ---------------------------------------------------------------------------------

FIRST_COMMIT = "The example company"


def init_embedded(root: Path, remote: Path, *, branch: str = "main", timeout: float = GIT_TIMEOUT_SECONDS) -> None:
    """Make `root` (the company's working tree) a git repository whose `origin` is the bare
    repository `remote`, with `branch` pushed there. Safe to run again: a working tree is never
    committed in or rewritten (its first commit, "The example company", is made only when it has
    none), the remote is created only when missing, and a push is only ever a fast-forward. Refused:
    a root and remote that have diverged, and publishing a root with changes not committed (the
    remote would not have them)."""
    root, remote = Path(root), Path(remote)
    if not root.is_absolute() or not remote.is_absolute():
        raise RemoteError(f"init_embedded needs absolute paths; got {root} and {remote}", code=ErrorCode.INVALID_INPUT)
    if not root.is_dir():
        raise RemoteError(f"the company's folder {root} does not exist", code=ErrorCode.INVALID_INPUT,
                          data={"root": str(root)})
    work = Repository(root, timeout=timeout)
    work.check_branch_name(branch)
    if not (root / ".git").exists():
        work.git("init", "-q", "-b", branch)
    root_sha = work.rev(branch)
    if root_sha is None:
        if work.git("rev-parse", "--verify", "--quiet", "HEAD", ok=(0, 1)).returncode == 0:
            raise RemoteError(f"{root} has commits but no branch '{branch}': check it out or name the branch",
                              code=ErrorCode.INVALID_INPUT, data={"root": str(root), "branch": branch})
        work.git("symbolic-ref", "HEAD", f"refs/heads/{branch}")
        work.git("add", "-A")
        work.git("-c", "core.hooksPath=/dev/null", "-c", "commit.gpgSign=false", "commit", "-q", "--allow-empty",
                 "-m", FIRST_COMMIT)
        root_sha = work.need(branch)
    if remote.exists():
        if not is_repository(remote):
            raise RemoteError(f"{remote} exists and is not a git repository", code=ErrorCode.INVALID_INPUT,
                              data={"remote": str(remote)})
    else:
        remote.parent.mkdir(parents=True, exist_ok=True)
        run_git(["init", "-q", "--bare", "-b", branch, str(remote)], remote.parent, timeout=timeout)
    origin = work.git("remote", "get-url", "origin", ok=(0, 2))
    if origin.returncode != 0:
        work.git("remote", "add", "origin", str(remote))
    elif _text(origin.stdout) != str(remote):
        work.git("remote", "set-url", "origin", str(remote))
    there = Repository(remote, timeout=timeout)
    remote_sha = there.rev(branch)
    if remote_sha == root_sha:
        return
    if remote_sha is not None and not (work.has_commit(remote_sha) and work.is_ancestor(remote_sha, root_sha)):
        if there.has_commit(root_sha) and there.is_ancestor(root_sha, remote_sha):
            return  # the remote is ahead (merged changes the working tree has not pulled yet): nothing to push
        raise RemoteError(f"'{branch}' of {root} and of {remote} have diverged: nothing was pushed; reconcile them "
                          f"by hand (git -C {root} pull origin {branch})", code=ErrorCode.NOT_MERGEABLE,
                          data={"root": str(root), "remote": str(remote), "root_sha": root_sha,
                                "remote_sha": remote_sha})
    first = [line for line in work.git("status", "--porcelain", "--untracked-files=normal").stdout.decode(
        "utf-8", "replace").splitlines() if line.strip()]
    if first:
        raise RemoteError(f"{root} has changes not committed ({', '.join(line[3:] for line in first[:5])}"
                          f"{' ...' if len(first) > 5 else ''}): the remote {remote} would not have them. Commit or "
                          "stash them, then run again", code=ErrorCode.INVALID_INPUT,
                          data={"root": str(root), "files": [line[3:] for line in first]})
    work.git("push", "-q", "-u", "origin", f"refs/heads/{branch}:refs/heads/{branch}")


__all__ = ["GitRemote", "Repository", "committer", "init_embedded", "install_hook", "is_repository",
           "repository_path", "run_git"]
