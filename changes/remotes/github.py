"""GitHub as a change's remote: branches, pull requests and merges through GitHub's REST API.

`GitHubRemote` serves `https://github.com/<owner>/<repo>` (with or without `.git`), or the same
under `web_url` for GitHub Enterprise (then `api_url` is `https://<host>/api/v3`, and `web_url`,
unless given, is `https://<host>`: see `web_url_of`). It speaks the
REST API (version 2022-11-28) with the standard library only:

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

Webhooks: `verify_signature` checks `X-Hub-Signature-256`; `events_of` reads a delivery as the
change messages it means (`pushed`, `checks_passed`, `checks_failed`, `merged`, `deployed`).
"""
from __future__ import annotations

import copy
import email.utils
import hashlib
import hmac
import http.client
import json
import posixpath
import re
import shutil
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from email.message import Message
from http.client import HTTPMessage
from pathlib import Path, PurePosixPath
from typing import IO, Any

from changes.remotes import diffs
from connectors.errors import ErrorCode, RemoteError, retryable_status
from connectors.remotes import ChangeStatus, Head, Merged

PUBLIC_API = "https://api.github.com"
PUBLIC_WEB = "https://github.com"
API_VERSION = "2022-11-28"
USER_AGENT = "sanoma-changes (+https://github.com)"
SECONDARY_LIMIT_WAIT = 60.0  # GitHub's advice when a secondary rate limit names no wait
MAX_PAGES = 10  # lists are read 100 a page: at most this many pages
SHA = re.compile(r"^[0-9a-fA-F]{7,40}$")
_REPO_PATH = re.compile(
    r"^/(?P<owner>[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)/(?P<repo>[A-Za-z0-9._-]+?)(?:\.git)?/?$")
_PULL_PATH = re.compile(r"^/(?P<owner>[^/]+)/(?P<repo>[^/]+)/pull/(?P<number>\d+)(?:/.*)?$")


class GitHubRemote:
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
        self._opener = urllib.request.build_opener(_SameHostAuthRedirects())

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
                                  f"change's branch must live in {owner}/{repo}", code=ErrorCode.NOT_MERGEABLE,
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
                                      code=ErrorCode.BRANCH_NOT_FOUND, status=404, data={"sha": sha}) from None
                raise
            archive.seek(0)
            dest.mkdir(parents=True, exist_ok=True)
            _extract(archive, dest, what=f"the tarball of {owner}/{repo} at {sha}")

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
        since the two parted), as `changes.remotes.diffs.report` shapes them. GitHub lists at most
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
                                  code=ErrorCode.BRANCH_NOT_FOUND, status=404, data={"branch": branch}) from None
            raise
        return str(found["commit"]["sha"])

    def _found_head(self, owner: str, repo: str, branch: str, pr: Mapping[str, Any] | None) -> str | None:
        """Where the branch points now (the pull request's head when the branch is gone)."""
        try:
            return self._branch_sha(owner, repo, branch)
        except RemoteError as err:
            if err.code != ErrorCode.BRANCH_NOT_FOUND:
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
                raise RemoteError(f"{owner}/{repo} has no pull request #{number}", code=ErrorCode.BRANCH_NOT_FOUND,
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
                                  f"has every commit of it", code=ErrorCode.NOT_MERGEABLE, status=422,
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
                           code=ErrorCode.NOT_MERGEABLE, status=405,
                           retryable="base branch was modified" in said.lower(),
                           data={"pull_request": pr.get("html_url"), "reason": said})

    def _conflict(self, owner: str, repo: str, branch: str, base: str, head_sha: str,
                  pr: Mapping[str, Any]) -> RemoteError:
        files = self._both_sides(owner, repo, base, head_sha)
        named = f": {', '.join(files)}" if files else ""
        return RemoteError(f"{branch} does not merge cleanly into {base} ({pr.get('html_url')}){named}",
                           code=ErrorCode.MERGE_CONFLICT,
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

    # --- HTTP -----------------------------------------------------------------------------------

    def _list(self, path: str, query: Mapping[str, str] | None = None, *, key: str | None = None) -> list[Any]:
        """A list endpoint's items, 100 a page, following `Link: rel="next"` (at most MAX_PAGES pages)."""
        items: list[Any] = []
        url: str | None = self._url(path, {**(query or {}), "per_page": "100"})
        for _ in range(MAX_PAGES):
            if url is None:
                break
            data, headers = self._exchange("GET", url)
            items.extend((data or {}).get(key, []) if key else (data or []))
            url = _next_link(headers.get("Link"))
        return items

    def _call(self, method: str, path: str, *, body: Any = None) -> Any:
        return self._exchange(method, self._url(path), body=body)[0]

    def _exchange(self, method: str, url: str, *, body: Any = None) -> tuple[Any, Message]:
        what = f"{method} {urllib.parse.urlsplit(self._url(url)).path}"
        with self._open(method, url, body=body) as reply:
            raw = _read(reply, what)
            try:
                return (json.loads(raw) if raw.strip() else None), reply.headers
            except ValueError:
                raise RemoteError(f"GitHub's answer to {what} is not JSON", status=reply.status) from None

    def _url(self, path: str, query: Mapping[str, str] | None = None) -> str:
        if path.startswith(("http://", "https://")):
            return path
        return self.api_url + path + (f"?{urllib.parse.urlencode(query)}" if query else "")

    def _open(self, method: str, url: str, *, body: Any = None) -> Any:
        url = self._url(url)
        request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                         headers={"Accept": "application/vnd.github+json",
                                                  "X-GitHub-Api-Version": API_VERSION, "User-Agent": USER_AGENT})
        if body is not None:
            request.add_header("Content-Type", "application/json")
        token = self.token()
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        what = f"{method} {urllib.parse.urlsplit(url).path}"
        try:
            return self._opener.open(request, timeout=self.timeout)
        except urllib.error.HTTPError as err:
            raise self._failure(err, what, token) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as err:
            reason = getattr(err, "reason", err)
            raise RemoteError(_scrub(f"GitHub could not be reached ({what}): {reason}", token),
                              retryable=True) from None

    def _failure(self, err: urllib.error.HTTPError, what: str, token: str | None) -> RemoteError:
        """GitHub's answer as a RemoteError: its status and `message`, retryable when trying later may help."""
        status = err.code
        try:
            payload = json.loads(err.read() or b"{}")
        except (ValueError, OSError):
            payload = {}
        said = _scrub(_message_of(payload) or (err.reason if isinstance(err.reason, str) else ""), token)
        headers = err.headers
        remaining = headers.get("x-ratelimit-remaining") if headers else None
        retry_after = _retry_after(headers.get("retry-after")) if headers else None
        secondary = "secondary rate limit" in said.lower()
        limited = status in (403, 429) and (remaining == "0" or retry_after is not None or secondary)
        if limited:
            if retry_after is None and remaining == "0":
                retry_after = _until(headers.get("x-ratelimit-reset"))
            if retry_after is None and secondary:
                retry_after = SECONDARY_LIMIT_WAIT
            text = f"GitHub's rate limit: it answered {status} to {what}: {said}"
            return RemoteError(_scrub(text, token), retryable=True, status=status, retry_after=retry_after,
                               data={"status": status, "message": said})
        if status in (401, 403):
            hint = " (check the GITHUB_TOKEN credential)" if status == 401 else ""
            return RemoteError(_scrub(f"GitHub refused {what} with {status}: {said}{hint}", token), retryable=False,
                               status=status, data={"status": status, "message": said})
        return RemoteError(_scrub(f"GitHub answered {status} to {what}: {said}", token),
                           retryable=retryable_status(status), status=status, data={"status": status, "message": said},
                           retry_after=retry_after if retryable_status(status) else None)

    def _copy_capped(self, reply: IO[bytes], out: IO[bytes], what: str) -> None:
        total = 0
        while chunk := _read(reply, what, 1 << 20):
            total += len(chunk)
            if total > self.max_archive_bytes:
                raise RemoteError(f"the tarball of {what} is over {self.max_archive_bytes} bytes")
            out.write(chunk)


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


class _SameHostAuthRedirects(urllib.request.HTTPRedirectHandler):
    """Follows redirects, keeping `Authorization` only while the host stays the same (GitHub's
    tarball redirects to a download host whose URL carries a token of its own)."""

    def redirect_request(self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str,
                         headers: HTTPMessage, newurl: str) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(newurl) != _origin(req.full_url):
            new.remove_header("Authorization")
        return new


def _read(reply: IO[bytes], what: str, size: int = -1) -> bytes:
    """A read of GitHub's answer; one that breaks off may go through on a later try."""
    try:
        return reply.read(size)
    except (http.client.HTTPException, OSError) as err:
        raise RemoteError(f"GitHub's answer to {what} broke off: {err!r}", retryable=True) from None


def _origin(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


def _q(text: str, safe: str = "") -> str:
    return urllib.parse.quote(text, safe=safe)


def _head_changed(owner: str, repo: str, branch: str, expected: str, found: str | None) -> RemoteError:
    return RemoteError(f"{branch} of {owner}/{repo} moved: it is at {found or 'nothing'}, not {expected}; nothing "
                       f"was merged", code=ErrorCode.HEAD_CHANGED, status=409,
                       data={"branch": branch, "expected": expected, "found": found})


def _changed(compare: Mapping[str, Any]) -> set[str]:
    names: set[str] = set()
    for entry in compare.get("files") or []:
        names.add(entry["filename"])
        if entry.get("previous_filename"):
            names.add(entry["previous_filename"])
    return names


def _message_of(payload: Any) -> str:
    """GitHub's `message`, with the validation errors' own messages after it."""
    if not isinstance(payload, dict):
        return ""
    said = str(payload.get("message") or "")
    details = [str(e.get("message") or e.get("code") or "") for e in payload.get("errors") or [] if isinstance(e, dict)]
    details = [d for d in details if d]
    return f"{said} ({'; '.join(details)})" if details else said


def _said(err: RemoteError) -> str:
    """GitHub's own message in a failure `_failure` made."""
    return str(err.data.get("message") or err.message)


def _scrub(text: str, token: str | None) -> str:
    return text.replace(token, "[token]") if token else text


def _retry_after(header: str | None) -> float | None:
    """`Retry-After` as seconds (a number or an HTTP date); None when absent or unreadable."""
    if not header:
        return None
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _until(reset: str | None) -> float | None:
    """Seconds until `x-ratelimit-reset` (epoch seconds)."""
    try:
        return max(0.0, float(reset) - time.time()) if reset else None
    except ValueError:
        return None


def _next_link(link: str | None) -> str | None:
    for part in (link or "").split(","):
        matched = re.match(r'\s*<([^>]+)>\s*;.*\brel="?next"?', part)
        if matched:
            return matched[1]
    return None


# --- the tarball ---------------------------------------------------------------------------------


def _extract(archive: IO[bytes], dest: Path, *, what: str) -> None:
    """Extract the archive into `dest` without its one top folder, after checking every member:
    nothing is written when one is refused."""
    try:
        tar = tarfile.open(fileobj=archive, mode="r:*")
    except tarfile.TarError as err:
        raise RemoteError(f"{what} is not a tar archive: {err}") from None
    with tar:
        keep: list[tarfile.TarInfo] = []
        top: str | None = None
        for member in tar.getmembers():
            name = member.name
            if name.startswith("/") or re.match(r"^[A-Za-z]:", name) or "\\" in name:
                _refuse(what, name, "an absolute path")
            parts = [p for p in PurePosixPath(name).parts if p != "."]
            if ".." in parts:
                _refuse(what, name, "a '..' in its path")
            if not parts:
                continue
            if top is None:
                top = parts[0]
            if parts[0] != top:
                _refuse(what, name, f"outside the archive's top folder {top}/")
            rest = "/".join(parts[1:])
            if not rest:
                continue
            if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
                _refuse(what, name, "neither a file, a folder nor a link")
            changes: dict[str, Any] = {"name": rest}
            if member.issym():
                target = member.linkname
                if target.startswith("/") or not target:
                    _refuse(what, name, f"a link to the absolute path {target!r}")
                landed = posixpath.normpath(posixpath.join(posixpath.dirname(rest), target))
                if landed == ".." or landed.startswith("../"):
                    _refuse(what, name, f"a link pointing outside ({target!r})")
            elif member.islnk():
                linked = [p for p in PurePosixPath(member.linkname).parts if p != "."]
                if member.linkname.startswith("/") or ".." in linked or not linked or linked[0] != top:
                    _refuse(what, name, f"a hard link pointing outside ({member.linkname!r})")
                changes["linkname"] = "/".join(linked[1:])
            kept = copy.copy(member)
            for name_, value in changes.items():
                setattr(kept, name_, value)
            keep.append(kept)
        try:
            # The standard library's "data" filter (Python 3.11.4 on) checks again as it writes.
            if hasattr(tarfile, "data_filter"):
                tar.extractall(dest, members=keep, filter="data")
            else:  # pragma: no cover - older 3.11s: the checks above are all there is
                tar.extractall(dest, members=keep)
        except (tarfile.TarError, OSError) as err:
            for child in dest.iterdir():
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
            raise RemoteError(f"{what} could not be written to {dest}: {err}") from None


def _refuse(what: str, member: str, why: str) -> None:
    raise RemoteError(f"{what} holds {member!r}, {why}: nothing was written", data={"member": member})


# --- webhooks ------------------------------------------------------------------------------------


def verify_signature(secret: str, body: bytes, header: str | None) -> bool:
    """Whether `X-Hub-Signature-256` (`sha256=<hex>`) is the HMAC-SHA256 of the raw body with the
    webhook's secret, compared in constant time. No secret, no header, or another algorithm: False."""
    if not secret or not header or not header.startswith("sha256="):
        return False
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), header.strip().encode())


def events_of(event: str, payload: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A GitHub webhook delivery (its `X-GitHub-Event` and JSON body) as the change messages it means:

    - `push` to a branch (not a tag, not a deletion): `("pushed", {branch, sha})`;
    - `check_suite` / `check_run` completed: `("checks_passed", {branch, sha, check})` when it
      succeeded, `("checks_failed", {..., conclusion})` when it failed, timed out, was cancelled or
      needs action (neutral and skipped say nothing). One check run is one check among the
      commit's: a workflow that needs all of them asks `status()`; `check` names the suite or run;
    - `pull_request` closed and merged: `("merged", {branch, sha: merge_commit_sha, base, head_sha,
      pull_request})`;
    - `deployment_status` success: `("deployed", {environment, sha, branch: the deployment's ref, url})`.

    Anything else (`ping`, other actions, a payload of another shape) means nothing: `[]`.
    """
    try:
        return _events(event, payload)
    except (AttributeError, KeyError, TypeError):
        return []


_FAILED = {"failure", "timed_out", "cancelled", "action_required", "startup_failure", "stale"}


def _events(event: str, payload: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    if event == "push":
        ref = payload.get("ref") or ""
        if not ref.startswith("refs/heads/") or payload.get("deleted") or not payload.get("after"):
            return []
        return [("pushed", {"branch": ref[len("refs/heads/"):], "sha": payload["after"]})]
    if event in ("check_suite", "check_run"):
        if payload.get("action") != "completed":
            return []
        item = payload[event]
        suite = item if event == "check_suite" else (item.get("check_suite") or {})
        branch = suite.get("head_branch") or next(
            (p["head"]["ref"] for p in item.get("pull_requests") or [] if p.get("head", {}).get("ref")), None)
        sha = item.get("head_sha")
        if not branch or not sha:
            return []
        check = item.get("name") or (item.get("app") or {}).get("slug") or event
        conclusion = item.get("conclusion")
        if conclusion == "success":
            return [("checks_passed", {"branch": branch, "sha": sha, "check": check})]
        if conclusion in _FAILED:
            return [("checks_failed", {"branch": branch, "sha": sha, "check": check, "conclusion": conclusion})]
        return []
    if event == "pull_request":
        pr = payload["pull_request"]
        if payload.get("action") != "closed" or not pr.get("merged"):
            return []
        return [("merged", {"branch": pr["head"]["ref"], "sha": pr["merge_commit_sha"], "base": pr["base"]["ref"],
                            "head_sha": pr["head"]["sha"], "pull_request": pr.get("html_url")})]
    if event == "deployment_status":
        status = payload["deployment_status"]
        if status.get("state") != "success":
            return []
        deployment = payload["deployment"]
        return [("deployed", {"environment": status.get("environment") or deployment.get("environment"),
                              "sha": deployment["sha"], "branch": deployment.get("ref"),
                              "url": status.get("environment_url") or status.get("target_url") or None})]
    return []


__all__ = ["GitHubRemote", "events_of", "verify_signature", "web_url_of"]
