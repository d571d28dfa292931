"""Setting a git repository up for sanoma: `install_hook` (a `post-receive` hook telling sanoma about
every pushed branch) and `init_embedded` (the demo's company working tree and its bare remote)."""
from __future__ import annotations

import os
import shlex
import threading
from collections.abc import Sequence
from pathlib import Path

from changes.lifecycle.errors import RemoteCode
from changes.lifecycle.remotes.repository import GIT_TIMEOUT_SECONDS, Repository, is_repository, run_git, text_of
from connectors.errors import ErrorCode, RemoteError

HOOK_LOG = "sanoma-hook.log"  # in the repository's git directory
HOOK_MARKER = "sanoma-post-receive"
CHAINED_HOOK = "post-receive.before-sanoma"

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
    elif text_of(origin.stdout) != str(remote):
        work.git("remote", "set-url", "origin", str(remote))
    there = Repository(remote, timeout=timeout)
    remote_sha = there.rev(branch)
    if remote_sha == root_sha:
        return
    if remote_sha is not None and not (work.has_commit(remote_sha) and work.is_ancestor(remote_sha, root_sha)):
        if there.has_commit(root_sha) and there.is_ancestor(root_sha, remote_sha):
            return  # the remote is ahead (merged changes the working tree has not pulled yet): nothing to push
        raise RemoteError(f"'{branch}' of {root} and of {remote} have diverged: nothing was pushed; reconcile them "
                          f"by hand (git -C {root} pull origin {branch})", code=RemoteCode.NOT_MERGEABLE,
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


__all__ = ["CHAINED_HOOK", "FIRST_COMMIT", "HOOK_LOG", "HOOK_MARKER", "init_embedded", "install_hook"]
