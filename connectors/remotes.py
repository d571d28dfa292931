"""Remote halves: how a change reaches the repository its company's config lives in.

A connector may attach a `remote` half (`with_setup(connector, remote=make)`, `make()` answering a
`Remote`). A remote says which repository URLs it serves (`handles`), and for one of them: where a
branch (or pull request) points (`resolve`), the files at a commit (`export`), how a branch merges
into the base with its head pinned (`merge`), and what it knows of a change (`status`). The change
workflow finds the half for its repository with `remote_for(url, remotes)`. A remote may also say
what a commit brings into the base (`diff(url, *, sha, base)`, as `changes.lifecycle.remotes.diffs` shapes
it): the merge's approver sees it; without it the change says the remote does not show diffs.

Every refusal is a `RemoteError` with a code a workflow can branch on: `branch_not_found`,
`merge_conflict` (`data["files"]`), `head_changed` (`data["expected"]`, `data["found"]`),
`not_mergeable`, or `driver_failed` (retryable when trying again may help, with `retry_after`
when the remote said how long to wait).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from connectors.errors import ErrorCode, RemoteError


@dataclass(frozen=True)
class Head:
    """Where a change's branch points: its commit, and the pull request when the remote has them."""

    url: str
    branch: str
    sha: str
    base: str = "main"
    pull_request: str | None = None  # the pull request's URL, where the remote has them
    title: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"url": self.url, "branch": self.branch, "sha": self.sha, "base": self.base,
                "pull_request": self.pull_request, "title": self.title}


@dataclass(frozen=True)
class Merged:
    """A merge that happened: the base's new commit, and whether it was a fast-forward."""

    sha: str
    base: str
    head_sha: str
    fast_forward: bool = False
    pull_request: str | None = None
    already: bool = False  # it had been merged before this call (a retried merge changes nothing)

    def as_dict(self) -> dict[str, Any]:
        return {"sha": self.sha, "base": self.base, "head_sha": self.head_sha, "fast_forward": self.fast_forward,
                "pull_request": self.pull_request, "already": self.already}


@dataclass(frozen=True)
class ChangeStatus:
    """What the remote knows of a change: its state (`open`, `merged`, `closed`), its head, the
    checks and reviews it reports (each a plain mapping), and whether it would merge now."""

    state: str
    head_sha: str
    base: str = "main"
    mergeable: bool | None = None
    checks: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)
    reviews: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        return {"state": self.state, "head_sha": self.head_sha, "base": self.base, "mergeable": self.mergeable,
                "checks": [dict(c) for c in self.checks], "reviews": [dict(r) for r in self.reviews]}


@runtime_checkable
class Remote(Protocol):
    """One kind of repository host. `name` says which (`git`, `github`)."""

    name: str

    def handles(self, url: str) -> bool:
        """Whether `url` is a repository this remote serves."""
        ...

    def resolve(self, url: str, *, branch: str | None = None, pull_request: str | None = None,
                base: str = "main") -> Head:
        """Where `branch` (or the pull request) points now. No such branch: `branch_not_found`."""
        ...

    def export(self, url: str, sha: str, dest: Path) -> None:
        """Write the files of commit `sha` into the empty folder `dest` (no `.git`)."""
        ...

    def merge(self, url: str, *, branch: str, head_sha: str, base: str = "main", title: str = "",
              message: str = "") -> Merged:
        """Merge `branch` into `base` only if the branch is still at `head_sha` (else
        `head_changed`, nothing merged): a fast-forward, or a merge commit; a conflict is
        `merge_conflict` naming the files and changes nothing. Merging a branch already merged at
        that head answers the earlier merge (`already=True`)."""
        ...

    def status(self, url: str, *, branch: str, base: str = "main") -> ChangeStatus:
        """What the remote knows of the branch's change."""
        ...


def remote_for(url: str, remotes: Iterable[Remote]) -> Remote:
    """The first remote that serves `url`; none is a clear error naming the remotes there are."""
    if not isinstance(url, str) or not url.strip():
        raise RemoteError("the repository's URL is empty: set SANOMA_REPO_URL or the live root's git remote "
                          "'origin'", code=ErrorCode.INVALID_INPUT)
    listed = list(remotes)
    for remote in listed:
        if remote.handles(url):
            return remote
    names = ", ".join(r.name for r in listed) or "none"
    raise RemoteError(f"no remote serves the repository {url} (remotes: {names})", code=ErrorCode.INVALID_INPUT,
                      data={"url": url})


__all__ = ["ChangeStatus", "Head", "Merged", "Remote", "RemoteError", "remote_for"]
