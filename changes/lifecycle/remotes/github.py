"""GitHub as a change's remote: branches, pull requests and merges through GitHub's REST API.

`GitHubRemote` serves `https://github.com/<owner>/<repo>` (with or without `.git`), or the same
under `web_url` for GitHub Enterprise (then `api_url` is `https://<host>/api/v3`, and `web_url`,
unless given, is `https://<host>`: see `web_url_of`). It speaks the
REST API (version 2022-11-28) through the GitHub client the `github` connector uses too
(`connectors.vendors.github.api`, on httpx):

- `resolve`: the branch's commit, and its open pull request into `base` when there is one; or a
  pull request (its URL or number) read as its head branch, commit and base.
- `export`: the commit's tarball (GitHub redirects to a download host: the token is not sent
  there), checked whole before anything is written: no absolute paths, no `..`, no link pointing
  outside, no devices; the archive's one top folder (`<owner>-<repo>-<sha7>/`) is stripped.
- `merge`: through a pull request (the branch's open one, else one it opens with `title` and
  `message`), merged with `merge_method: merge` and `sha` pinned to `head_sha`, so GitHub refuses
  (409) when the branch moved: `head_changed`, nothing merged. A pull request already merged at
  that head answers its merge (`already=True`), so a retried merge changes nothing.
- `status`: the pull request's state, head, mergeability, check runs and reviews (a branch with
  no pull request is `open`, with its commit's check runs and no reviews).

GitHub does not say which files conflict. `merge_conflict`'s `data["files"]` is the best GitHub's
compare API allows: the files changed on both sides since the branch left the base (every file in
conflict is among them; one changed on both sides may still merge cleanly), with
`data["files_are"] = "changed_on_both_sides"` saying so. Empty when the compare calls fail.

Every failure is a `RemoteError`: 401/403 are `driver_failed`, not retryable; a rate limit (403 or
429 with `x-ratelimit-remaining: 0`, a `retry-after` header, or GitHub's secondary-limit message)
and 5xx/408 are retryable, with `retry_after` the seconds until `x-ratelimit-reset` (or
`retry-after`). The token is read from `token()` at every request and never appears in a message.

The HTTP half is `changes.lifecycle.remotes.github_api` (over the shared client), the tarball's unpacking
`changes.lifecycle.remotes.github_tarball`, and the webhooks `changes.lifecycle.remotes.github_webhooks`.
"""
from __future__ import annotations

import re
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from changes.lifecycle.errors import RemoteCode
from changes.lifecycle.remotes import diffs
from changes.lifecycle.remotes.github_api import GitHubAPI
from changes.lifecycle.remotes.github_tarball import extract
from connectors.errors import ErrorCode, RemoteError
from connectors.remotes import ChangeStatus, Head, Merged
from connectors.vendors.github.api import PUBLIC_API, GitHubClient

PUBLIC_WEB = "https://github.com"
SHA = re.compile(r"^[0-9a-fA-F]{7,40}$")
_REPO_PATH = re.compile(
    r"^/(?P<owner>[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)/(?P<repo>[A-Za-z0-9._-]+?)(?:\.git)?/?$")
_PULL_PATH = re.compile(r"^/(?P<owner>[^/]+)/(?P<repo>[^/]+)/pull/(?P<number>\d+)(?:/.*)?$")


class GitHubRemote(GitHubAPI):
    """A change's remote on GitHub (or GitHub Enterprise), over its REST API."""

    name = "github"
    # When GitHub has not worked out a pull request's mergeability yet (`mergeable: null`), it is
    # read again after each of these pauses before the merge goes ahead without knowing.
    mergeable_waits: tuple[float, ...] = (1.0, 2.0)
    max_archive_bytes = 512 * 1024 * 1024

    def __init__(self, api_url: str = PUBLIC_API, web_url: str | None = None, *,
                 token: Callable[[], str | None] | None = None, timeout: float = 30) -> None:
        self.api_url = api_url.rstrip("/")
        self.web_url = (web_url or web_url_of(self.api_url)).rstrip("/")
        self.token = token or (lambda: None)
        self.timeout = timeout
        self.client = GitHubClient(self.api_url, token=lambda: self.token(), timeout=timeout)

    def __repr__(self) -> str:  # never the token
        return f"GitHubRemote(api_url={self.api_url!r}, web_url={self.web_url!r})"

    # --- the protocol ---------------------------------------------------------------------------

    def handles(self, url: str) -> bool:
        return self._repo_of(url) is not None

    def resolve(self, url: str, *, branch: str | None = None, pull_request: str | int | None = None,
                base: str = "main") -> Head:
        owner, repo = self._repo(url)
        if (branch is None) == (pull_request is None):
            raise RemoteError("resolve takes a branch or a pull request (one of them)", code=ErrorCode.INVALID_INPUT)
        if pull_request is not None:
            number = self._pull_number(owner, repo, pull_request)
            pr = self._pull(owner, repo, number)
            head_repo = ((pr.get("head") or {}).get("repo") or {}).get("full_name")
            if head_repo and head_repo.lower() != f"{owner}/{repo}".lower():
                raise RemoteError(f"pull request #{number} of {owner}/{repo} comes from the fork {head_repo}: a "
                                  f"change's branch must live in {owner}/{repo}", code=RemoteCode.NOT_MERGEABLE,
                                  data={"pull_request": pr.get("html_url"), "head_repo": head_repo})
            return Head(url=url, branch=pr["head"]["ref"], sha=pr["head"]["sha"], base=pr["base"]["ref"],
                        pull_request=pr.get("html_url"), title=pr.get("title") or "")
        assert branch is not None
        sha = self._branch_sha(owner, repo, branch)
        pulls = self._pulls(owner, repo, branch, base, state="open")
        listed = pulls[0] if pulls else {}
        return Head(url=url, branch=branch, sha=sha, base=base, pull_request=listed.get("html_url"),
                    title=listed.get("title") or "")

    def export(self, url: str, sha: str, dest: Path) -> None:
        owner, repo = self._repo(url)
        if not isinstance(sha, str) or not SHA.match(sha):
            raise RemoteError(f"export takes a commit's SHA, not {sha!r}", code=ErrorCode.INVALID_INPUT)
        dest = Path(dest)
        if dest.exists() and any(dest.iterdir()):
            raise RemoteError(f"export writes into an empty folder: {dest} is not empty", code=ErrorCode.INVALID_INPUT)
        path = f"/repos/{_q(owner)}/{_q(repo)}/tarball/{sha}"
        with tempfile.TemporaryFile() as archive:
            try:
                with self._open("GET", path) as reply:
                    self._copy_capped(reply, archive, path)
            except RemoteError as err:
                if err.status == 404:
                    raise RemoteError(f"{owner}/{repo} has no commit {sha} (or the token cannot see the repository)",
                                      code=RemoteCode.BRANCH_NOT_FOUND, status=404, data={"sha": sha}) from None
                raise
            archive.seek(0)
            dest.mkdir(parents=True, exist_ok=True)
            extract(archive, dest, what=f"the tarball of {owner}/{repo} at {sha}")

    def merge(self, url: str, *, branch: str, head_sha: str, base: str = "main", title: str = "",
              message: str = "") -> Merged:
        owner, repo = self._repo(url)
        pulls = self._pulls(owner, repo, branch, base, state="all")
        for pr in pulls:
            if pr.get("merged_at") and (pr.get("head") or {}).get("sha") == head_sha:
                return self._already(pr, base, head_sha)
        listed = next((p for p in pulls if p.get("state") == "open"), None)
        if listed is None:
            at = self._branch_sha(owner, repo, branch)
            if at != head_sha:
                raise _head_changed(owner, repo, branch, head_sha, at)
            listed = self._open_pull(owner, repo, branch, base, title, message)
        number = int(listed["number"])
        pr = self._settled_pull(owner, repo, number)
        if pr["head"]["sha"] != head_sha:  # unless GitHub's pull request lags its branch: the pinned sha decides
            found = self._found_head(owner, repo, branch, pr)
            if found != head_sha:
                raise _head_changed(owner, repo, branch, head_sha, found)
        if pr.get("mergeable") is False:
            raise self._conflict(owner, repo, branch, base, head_sha, pr)
        body: dict[str, Any] = {"sha": head_sha, "merge_method": "merge"}
        if title:
            body["commit_title"] = title
        if message:
            body["commit_message"] = message
        try:
            done = self._call("PUT", f"/repos/{_q(owner)}/{_q(repo)}/pulls/{number}/merge", body=body)
        except RemoteError as err:
            if err.status == 409:
                raise _head_changed(owner, repo, branch, head_sha,
                                    self._found_head(owner, repo, branch, None)) from None
            if err.status != 405:
                raise
            outcome = self._refused(owner, repo, branch, base, head_sha, number, err)
            if isinstance(outcome, Merged):  # a merge of this very head won the race
                return outcome
            raise outcome from None
        return Merged(sha=done["sha"], base=base, head_sha=head_sha, fast_forward=False,
                      pull_request=pr.get("html_url"))

    def status(self, url: str, *, branch: str, base: str = "main") -> ChangeStatus:
        owner, repo = self._repo(url)
        pulls = self._pulls(owner, repo, branch, base, state="all")
        listed = (next((p for p in pulls if p.get("state") == "open"), None)
                  or next((p for p in pulls if p.get("merged_at")), None)
                  or (pulls[0] if pulls else None))
        if listed is None:
            sha = self._branch_sha(owner, repo, branch)
            return ChangeStatus(state="open", head_sha=sha, base=base, checks=self._checks(owner, repo, sha))
        number = int(listed["number"])
        pr = self._pull(owner, repo, number)
        merged = bool(pr.get("merged") or pr.get("merged_at"))
        state = "merged" if merged else ("open" if pr.get("state") == "open" else "closed")
        sha = pr["head"]["sha"]
        reviews = self._list(f"/repos/{_q(owner)}/{_q(repo)}/pulls/{number}/reviews")
        return ChangeStatus(
            state=state, head_sha=sha, base=pr["base"]["ref"],
            mergeable=None if state != "open" else pr.get("mergeable"),
            checks=self._checks(owner, repo, sha),
            reviews=tuple({"user": (r.get("user") or {}).get("login"), "state": r.get("state"),
                           "commit_id": r.get("commit_id"), "submitted_at": r.get("submitted_at")} for r in reviews),
        )

    def diff(self, url: str, *, sha: str, base: str = "main") -> dict[str, Any]:
        """What merging commit `sha` brings into `base` (the compare API, `base...sha`: the changes
        since the two parted), as `changes.lifecycle.remotes.diffs.report` shapes them. GitHub lists at most
        300 files and leaves out the patch of a large one."""
        owner, repo = self._repo(url)
        if not isinstance(sha, str) or not SHA.match(sha):
            raise RemoteError(f"diff takes a commit's SHA, not {sha!r}", code=ErrorCode.INVALID_INPUT)
        compare = self._call("GET", f"/repos/{_q(owner)}/{_q(repo)}/compare/{_q(base, safe='')}...{sha}")
        files, patches = [], []
        for entry in compare.get("files") or []:
            path = entry.get("filename") or "?"
            files.append({"path": path, "status": entry.get("status"), "added": entry.get("additions"),
                          "removed": entry.get("deletions")})
            if entry.get("patch"):
                old = entry.get("previous_filename") or path
                patches.append(f"diff --git a/{old} b/{path}\n--- a/{old}\n+++ b/{path}\n{entry['patch']}\n")
        return diffs.report(base=base, base_sha=(compare.get("base_commit") or {}).get("sha") or "",
                            merge_base=(compare.get("merge_base_commit") or {}).get("sha") or "", sha=sha,
                            files=files, patch="".join(patches))

    # --- GitHub's objects -----------------------------------------------------------------------

    def _repo_of(self, url: Any) -> tuple[str, str] | None:
        """(owner, repo) of a repository URL this remote serves; None for any other."""
        if not isinstance(url, str):
            return None
        try:
            parts = urllib.parse.urlsplit(url.strip())
        except ValueError:
            return None
        if parts.query or parts.fragment or parts.username or parts.password:
            return None
        for web in self._webs():
            root = urllib.parse.urlsplit(web)
            prefix = root.path.rstrip("/")
            if (parts.scheme.lower(), parts.netloc.lower()) != (root.scheme.lower(), root.netloc.lower()):
                continue
            if not parts.path.startswith(prefix + "/"):
                continue
            matched = _REPO_PATH.match(parts.path[len(prefix):])
            if matched:
                return matched["owner"], matched["repo"]
        return None

    def _webs(self) -> list[str]:
        """`web_url`; github.com too while the API is github.com's (an Enterprise API serves only its own)."""
        webs = [self.web_url]
        if self.api_url == PUBLIC_API and self.web_url != PUBLIC_WEB:
            webs.append(PUBLIC_WEB)
        return webs

    def _repo(self, url: str) -> tuple[str, str]:
        found = self._repo_of(url)
        if found is None:
            raise RemoteError(f"{url!r} is not a GitHub repository URL ({self.web_url}/<owner>/<repo>)",
                              code=ErrorCode.INVALID_INPUT, data={"url": url})
        return found

    def _pull_number(self, owner: str, repo: str, pull_request: str | int) -> int:
        """A pull request's number from its number (`12`, `"#12"`) or its web URL (of this repository)."""
        if isinstance(pull_request, int) and not isinstance(pull_request, bool) and pull_request > 0:
            return pull_request
        text = str(pull_request).strip()
        if re.fullmatch(r"#?\d+", text) and int(text.lstrip("#")) > 0:
            return int(text.lstrip("#"))
        for web in self._webs():
            if text.lower().startswith(web.lower() + "/"):
                matched = _PULL_PATH.match(text[len(web):].split("?")[0].split("#")[0])
                if matched and (matched["owner"].lower(), matched["repo"].lower()) == (owner.lower(), repo.lower()):
                    return int(matched["number"])
        raise RemoteError(f"{pull_request!r} is not a pull request of {owner}/{repo} (its number or "
                          f"{self.web_url}/{owner}/{repo}/pull/<number>)", code=ErrorCode.INVALID_INPUT)

    def _branch_sha(self, owner: str, repo: str, branch: str) -> str:
        try:
            found = self._call("GET", f"/repos/{_q(owner)}/{_q(repo)}/branches/{_q(branch, safe='/')}")
        except RemoteError as err:
            if err.status == 404:
                raise RemoteError(f"{owner}/{repo} has no branch {branch!r} (or the token cannot see the repository)",
                                  code=RemoteCode.BRANCH_NOT_FOUND, status=404, data={"branch": branch}) from None
            raise
        return str(found["commit"]["sha"])

    def _found_head(self, owner: str, repo: str, branch: str, pr: Mapping[str, Any] | None) -> str | None:
        """Where the branch points now (the pull request's head when the branch is gone)."""
        try:
            return self._branch_sha(owner, repo, branch)
        except RemoteError as err:
            if err.code != RemoteCode.BRANCH_NOT_FOUND:
                raise
            return (pr or {}).get("head", {}).get("sha")

    def _pulls(self, owner: str, repo: str, branch: str, base: str, *, state: str) -> list[dict[str, Any]]:
        """The branch's pull requests into `base`, newest first."""
        return self._list(f"/repos/{_q(owner)}/{_q(repo)}/pulls",
                          {"head": f"{owner}:{branch}", "base": base, "state": state})

    def _pull(self, owner: str, repo: str, number: int) -> dict[str, Any]:
        try:
            return dict(self._call("GET", f"/repos/{_q(owner)}/{_q(repo)}/pulls/{number}"))
        except RemoteError as err:
            if err.status == 404:
                raise RemoteError(f"{owner}/{repo} has no pull request #{number}", code=RemoteCode.BRANCH_NOT_FOUND,
                                  status=404, data={"pull_request": number}) from None
            raise

    def _settled_pull(self, owner: str, repo: str, number: int) -> dict[str, Any]:
        """The pull request, read again while GitHub is still working out whether it merges."""
        pr = self._pull(owner, repo, number)
        for pause in self.mergeable_waits:
            if pr.get("mergeable") is not None or pr.get("state") != "open":
                break
            time.sleep(pause)
            pr = self._pull(owner, repo, number)
        return pr

    def _open_pull(self, owner: str, repo: str, branch: str, base: str, title: str, message: str) -> dict[str, Any]:
        body = {"title": title or branch, "head": branch, "base": base, "body": message}
        try:
            return dict(self._call("POST", f"/repos/{_q(owner)}/{_q(repo)}/pulls", body=body))
        except RemoteError as err:
            if err.status != 422:
                raise
            said = err.message.lower()
            if "already exists" in said:  # opened by someone else since the list: use theirs
                pulls = self._pulls(owner, repo, branch, base, state="open")
                if pulls:
                    return pulls[0]
            if "no commits between" in said:
                raise RemoteError(f"{branch} has nothing to merge into {base} in {owner}/{repo}: {base} already "
                                  f"has every commit of it", code=RemoteCode.NOT_MERGEABLE, status=422,
                                  data={"branch": branch, "base": base}) from None
            raise

    def _already(self, pr: Mapping[str, Any], base: str, head_sha: str) -> Merged:
        return Merged(sha=str(pr.get("merge_commit_sha")), base=base, head_sha=head_sha, fast_forward=False,
                      pull_request=pr.get("html_url"), already=True)

    def _refused(self, owner: str, repo: str, branch: str, base: str, head_sha: str, number: int,
                 err: RemoteError) -> RemoteError | Merged:
        """What GitHub's 405 meant: a conflict, a merge that happened meanwhile, or another refusal."""
        said = _said(err)
        pr = self._pull(owner, repo, number)
        if pr.get("merged_at") and pr["head"]["sha"] == head_sha:
            return self._already(pr, base, head_sha)
        if "conflict" in said.lower() or pr.get("mergeable") is False:
            return self._conflict(owner, repo, branch, base, head_sha, pr)
        return RemoteError(f"GitHub will not merge {branch} into {base} ({pr.get('html_url')}): {said}",
                           code=RemoteCode.NOT_MERGEABLE, status=405,
                           retryable="base branch was modified" in said.lower(),
                           data={"pull_request": pr.get("html_url"), "reason": said})

    def _conflict(self, owner: str, repo: str, branch: str, base: str, head_sha: str,
                  pr: Mapping[str, Any]) -> RemoteError:
        files = self._both_sides(owner, repo, base, head_sha)
        named = f": {', '.join(files)}" if files else ""
        return RemoteError(f"{branch} does not merge cleanly into {base} ({pr.get('html_url')}){named}",
                           code=RemoteCode.MERGE_CONFLICT,
                           data={"files": files, "files_are": "changed_on_both_sides",
                                 "pull_request": pr.get("html_url"), "head_sha": head_sha})

    def _both_sides(self, owner: str, repo: str, base: str, head_sha: str) -> list[str]:
        """The files changed on both the branch and the base since they parted (compare API, twice)."""
        compare = f"/repos/{_q(owner)}/{_q(repo)}/compare/"
        try:
            ours = self._call("GET", compare + f"{_q(base, safe='')}...{head_sha}")
            parted = ours["merge_base_commit"]["sha"]
            theirs = self._call("GET", compare + f"{parted}...{_q(base, safe='')}")
        except (RemoteError, KeyError, TypeError):
            return []
        return sorted(_changed(ours) & _changed(theirs))

    def _checks(self, owner: str, repo: str, sha: str) -> tuple[dict[str, Any], ...]:
        try:
            runs = self._list(f"/repos/{_q(owner)}/{_q(repo)}/commits/{sha}/check-runs", key="check_runs")
        except RemoteError as err:
            if err.status != 403 or err.retryable:
                raise
            # Never an empty list instead: no checks must not read as checks that passed.
            raise RemoteError(f"{err.message} (a fine-grained token cannot be granted GitHub's Checks permission: "
                              f"use a GitHub App's token or a classic token with the repo scope)",
                              status=403, data=err.data) from None
        return tuple({"name": r.get("name"), "status": r.get("status"), "conclusion": r.get("conclusion"),
                      "url": r.get("html_url") or r.get("details_url")} for r in runs)


def web_url_of(api_url: str) -> str:
    """The web root an API root belongs to: github.com's for api.github.com, `https://<host>` for
    Enterprise Server's `https://<host>/api/v3`, `https://<name>` for `https://api.<name>` (a
    ghe.com data-residency API); github.com's for any other."""
    parts = urllib.parse.urlsplit(api_url.rstrip("/"))
    if api_url.rstrip("/") == PUBLIC_API or not parts.netloc:
        return PUBLIC_WEB
    if parts.path.rstrip("/").endswith("/api/v3"):
        return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/")[:-len("/api/v3")], "", ""))
    if parts.netloc.lower().startswith("api.") and parts.path in ("", "/"):
        return f"{parts.scheme}://{parts.netloc[len('api.'):]}"
    return PUBLIC_WEB


def _q(text: str, safe: str = "") -> str:
    return urllib.parse.quote(text, safe=safe)


def _head_changed(owner: str, repo: str, branch: str, expected: str, found: str | None) -> RemoteError:
    return RemoteError(f"{branch} of {owner}/{repo} moved: it is at {found or 'nothing'}, not {expected}; nothing "
                       f"was merged", code=RemoteCode.HEAD_CHANGED, status=409,
                       data={"branch": branch, "expected": expected, "found": found})


def _changed(compare: Mapping[str, Any]) -> set[str]:
    names: set[str] = set()
    for entry in compare.get("files") or []:
        names.add(entry["filename"])
        if entry.get("previous_filename"):
            names.add(entry["previous_filename"])
    return names


def _said(err: RemoteError) -> str:
    """GitHub's own message in a failure `_failure` made."""
    return str(err.data.get("message") or err.message)


__all__ = ["GitHubRemote", "web_url_of"]
