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

Its git commands run as `changes.lifecycle.remotes.repository` runs them (a timeout, no prompt,
sanoma's committer); setting a repository up (`install_hook`, `init_embedded`) is in
`changes.lifecycle.remotes.git_setup`.
"""
from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from changes.lifecycle.errors import RemoteCode
from changes.lifecycle.remotes import diffs
from changes.lifecycle.remotes.git_setup import init_embedded, install_hook
from changes.lifecycle.remotes.repository import (
    GIT_TIMEOUT_SECONDS,
    LOCK_TIMEOUT_SECONDS,
    Repository,
    check_sha,
    git_env,
    is_repository,
    repository_path,
    text_of,
)
from connectors.errors import ErrorCode, RemoteError
from connectors.remotes import ChangeStatus, Head, Merged

CAS_ATTEMPTS = 5  # a base moved by a push between reading it and moving it: merge again onto the new base

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
        sha = check_sha(sha)
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
        head_sha = check_sha(head_sha, "head_sha")
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
                                      "since it was checked: nothing was merged", code=RemoteCode.HEAD_CHANGED,
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
                                          f"({shown}); nothing was merged", code=RemoteCode.MERGE_CONFLICT,
                                          data={"files": conflicts, "branch": branch, "base": base,
                                                "head_sha": head_sha, "base_sha": base_sha})
                    text = "\n\n".join(p.strip() for p in (title, message) if p and p.strip())
                    text = (text + "\n\n" if text else "") + f"Merge branch '{branch}' ({head_sha})\n"
                    new = text_of(repo.git("commit-tree", "--no-gpg-sign", tree, "-p", base_sha, "-p", head_sha,
                                         input=text.encode()).stdout)
                    fast_forward = False
                if self._move_base(repo, base, new, base_sha):
                    return Merged(sha=new, base=base, head_sha=head_sha, fast_forward=fast_forward)
                # a push moved the base between reading it and moving it: merge onto the new base
        raise RemoteError(f"the base '{base}' of {url} kept moving while '{branch}' was merged into it: nothing was "
                          "merged; try again", retryable=True, data={"branch": branch, "base": base})

    def diff(self, url: str, *, sha: str, base: str = "main") -> dict[str, Any]:
        """What merging commit `sha` brings into `base`: the changes since the two parted
        (`git diff base...sha`), as `changes.lifecycle.remotes.diffs.report` shapes them."""
        repo = self._repo(url)
        repo.check_branch_name(base, "base branch")
        sha = check_sha(sha)
        if not repo.has_commit(sha):
            raise RemoteError(f"the repository {url} has no commit {sha}", data={"sha": sha, "url": url})
        base_sha = repo.need(base, what="base branch")
        parted = repo.git("merge-base", base_sha, sha, ok=(0, 1))
        if parted.returncode != 0:
            raise RemoteError(f"the commit {sha[:12]} and the base '{base}' of {url} have no commit in common",
                              code=RemoteCode.NOT_MERGEABLE, data={"base_sha": base_sha, "head_sha": sha})
        since = text_of(parted.stdout)
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
            if err.code != RemoteCode.NOT_MERGEABLE:
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
            policy = text_of(repo.git("config", "--get", "receive.denyCurrentBranch", ok=(0, 1)).stdout).lower()
            if policy == "updateinstead":
                update_files = True
                _check_clean(repo, checked_out.path, base)
            elif policy not in ("ignore", "warn", "false", "no", "off", "0"):
                raise RemoteError(f"the base '{base}' is checked out in the working tree {checked_out.path}: merging "
                                  "would leave its files behind the branch, so it is refused as a push would be. "
                                  f"Check out another branch there, use a bare repository, or run `git -C "
                                  f"{checked_out.path} config receive.denyCurrentBranch updateInstead` to let merges "
                                  "update its files", code=RemoteCode.NOT_MERGEABLE,
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
        stderr = text_of(done.stderr)
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
                          "was merged (commit or stash them there first)", code=RemoteCode.NOT_MERGEABLE,
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
    proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=repo.path, env=git_env(repo.path),
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


__all__ = ["GitRemote"]
