"""The local GitHub: one `VendorServer` answering GitHub's REST API (version 2022-11-28) for both
the `github` connector's driver and the change workflow's GitHub remote.

- The organization's repositories, branch protections and team memberships (what the connector
  manages) are answered by `emulator.GitHub` from `state.org`, the same GitHub the fake emulates.
- Real git repositories (what the remote resolves, exports and merges) are answered by
  `github_git.GitRepos` from bare repositories on disk (`repos={"acme/config": path}`), including
  the tarball's redirect to a download host (`localhost`) whose URL carries a token of its own.

Around both, what GitHub's HTTP layer does:

- `Authorization: Bearer <token>` (or `token <token>`) is required, else 401 "Bad credentials";
- every answer carries GitHub's rate-limit headers (`x-ratelimit-limit`, `-remaining`, `-used`,
  `-reset`, `-resource`), counting down;
- `rate_limit(times, reset_in)` (also `primary_limit`): the next requests answer 403 "API rate
  limit exceeded" with `x-ratelimit-remaining: 0` and `x-ratelimit-reset` that many seconds ahead;
- `secondary_limit(times, status=403|429, retry_after=...)`: GitHub's "You have exceeded a secondary
  rate limit", with `Retry-After` when given (GitHub's advice without one: wait a minute);
- `fail(times, status)` (also `server_error`): GitHub's 5xx;
- the base's faults (a slow answer, a dropped connection), its request log (`received`), and
  `requests`/`calls(...)`: the log as dicts (method, path, query, json, authorized, host, accept,
  api_version, user_agent).

    with GitHubServer({"acme/config": repo.bare}, token="ghp_x") as server:
        server.state.org["repos"]  # the organization's repositories, as GitHub holds them
"""
from __future__ import annotations

import json
import re
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from connectors.http.vendor_server import Answer, Received, VendorServer
from connectors.vendors.github.emulator import ROUTES, GitHub, initial_state
from connectors.vendors.github.tests.github_git import GitHubState, GitRepos, now

DOCS = "https://docs.github.com/rest"
RATE_LIMIT_DOCS = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"
Handler = Callable[[Received, dict[str, str]], Answer]


class GitHubServer(VendorServer):
    """The local GitHub (see the module's docstring)."""

    def __init__(self, repos: Mapping[str, Path] | None = None, *, token: str, org: str = "acme",
                 web_url: str = "https://github.com", download_host: str = "localhost", limit: int = 5000) -> None:
        super().__init__("github")
        self.token = token
        self.limit = limit
        self.reset_at = int(time.time()) + 3600
        self.state = GitHubState(repos={k.lower(): Path(v) for k, v in (repos or {}).items()}, token=token,
                                 web_url=web_url, download_host=download_host, org=initial_state(org))
        self.git = GitRepos(self.state, port=lambda: int(self.url.rsplit(":", 1)[1]))
        # The download host's URL carries a token of its own: no Authorization there.
        self.route("GET", r"/_codeload/{owner}/{name}/legacy\.tar\.gz/(?P<sha>.+)")(self._download)
        for method, pattern, _ in ROUTES:
            self.route(method, pattern)(self._guarded(self._org))
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            self.route(method, "/repos/{owner}/{repo}/(?P<rest>.+)")(self._guarded(self._repos))

    def __enter__(self) -> GitHubServer:
        self.start()
        return self

    @contextmanager
    def running(self) -> Iterator[GitHubServer]:
        with self:
            yield self

    # --- what GitHub's HTTP layer does around every API request ---------------------------------------

    def _headers(self, *, remaining: int | None = None, reset_at: int | None = None) -> dict[str, str]:
        left = max(0, self.limit - self.state.used) if remaining is None else remaining
        return {"x-ratelimit-limit": str(self.limit), "x-ratelimit-remaining": str(left),
                "x-ratelimit-used": str(self.state.used), "x-ratelimit-reset": str(reset_at or self.reset_at),
                "x-ratelimit-resource": "core", "X-GitHub-Api-Version-Selected": "2022-11-28"}

    def _guarded(self, handler: Handler) -> Handler:
        def answer(request: Received, params: dict[str, str]) -> Answer:
            gh = self.state
            with gh.lock:
                if request.header("Authorization") not in (f"Bearer {self.token}", f"token {self.token}"):
                    return Answer(401, {"message": "Bad credentials", "documentation_url": DOCS}, self._headers())
                gh.used += 1
                if gh.limited > 0:
                    gh.limited -= 1
                    reset_at = int(time.time() + gh.limit_reset_in)
                    return Answer(403, {"message": "API rate limit exceeded for user ID 1. If you reach out to "
                                                   "GitHub Support for help, please include the request ID.",
                                        "documentation_url": RATE_LIMIT_DOCS},
                                  self._headers(remaining=0, reset_at=reset_at))
                times, status, retry_after = gh.secondary
                if times > 0:
                    gh.secondary = (times - 1, status, retry_after)
                    headers = self._headers()
                    if retry_after is not None:
                        headers["Retry-After"] = str(retry_after)
                    return Answer(status, {"message": "You have exceeded a secondary rate limit. Please wait a few "
                                                      "minutes before you try again. If you reach out to GitHub "
                                                      "Support for help, please include the request ID.",
                                           "documentation_url": RATE_LIMIT_DOCS}, headers)
                if gh.failing > 0 and gh.failing_method in (None, request.method):
                    gh.failing -= 1
                    return Answer(gh.failing_status, {"message": "Server Error", "documentation_url": DOCS},
                                  self._headers())
                answered = handler(request, params)
                answered.headers = {**self._headers(), **answered.headers}
                return answered

        return answer

    def _org(self, request: Received, params: dict[str, str]) -> Answer:
        try:
            body = request.json()
        except ValueError:
            return Answer(400, {"message": "Problems parsing JSON", "documentation_url": DOCS})
        query = {k: v[-1] for k, v in request.query.items()}
        reply = GitHub(self.state.org, base=self.url).answer(request.method, request.path, query, body)
        return Answer(reply.status, reply.body, dict(reply.headers))

    def _repos(self, request: Received, params: dict[str, str]) -> Answer:
        try:
            body = request.json()
        except ValueError:
            body = {"_unparsed": request.body.decode(errors="replace")}
        query = {k: v[-1] for k, v in request.query.items()}
        return self.git.route(request.method, request.path, query, body or {})

    def _download(self, request: Received, params: dict[str, str]) -> Answer:
        query = urllib.parse.urlencode({k: v[-1] for k, v in request.query.items()})
        with self.state.lock:
            return self.git.download(*(urllib.parse.unquote(params[k]) for k in ("owner", "name", "sha")),
                                     query=query)

    # --- the request log ----------------------------------------------------------------------------

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every request received, as a dict: method, path (unquoted), query, json, authorized, host,
        accept, api_version, user_agent."""
        with self._lock:
            received = list(self.received)
        logged = []
        for r in received:
            try:
                body = json.loads(r.body) if r.body.strip() else None
            except ValueError:
                body = {"_unparsed": r.body.decode(errors="replace")}
            logged.append({"method": r.method, "path": urllib.parse.unquote(r.path),
                           "query": {k: v[-1] for k, v in r.query.items()}, "json": body,
                           "authorized": bool(r.header("Authorization")),
                           "host": (r.header("Host") or "").split(":")[0], "accept": r.header("Accept"),
                           "api_version": r.header("X-GitHub-Api-Version"), "user_agent": r.header("User-Agent")})
        return logged

    def calls(self, method: str, pattern: str) -> list[dict[str, Any]]:
        """The recorded requests of that method whose path matches the pattern."""
        return [r for r in self.requests if r["method"] == method and re.fullmatch(pattern, r["path"])]

    # --- GitHub's limits and failures ---------------------------------------------------------------

    def rate_limit(self, times: int = 1, *, reset_in: float = 3.0) -> None:
        """The next `times` API requests answer the primary rate limit, reset `reset_in` s after each."""
        self.state.limited, self.state.limit_reset_in = times, reset_in

    def primary_limit(self, times: int = 1, *, reset_in: float = 3.0) -> int:
        """`rate_limit`, answering the reset (epoch seconds) the next request will be told."""
        self.rate_limit(times, reset_in=reset_in)
        return int(time.time() + reset_in)

    def secondary_limit(self, times: int = 1, *, status: int = 403, retry_after: int | None = None) -> None:
        """The next `times` API requests answer a secondary rate limit (`Retry-After` when given)."""
        self.state.secondary = (times, status, retry_after)

    def fail(self, times: int = 1, *, status: int = 502, method: str | None = None) -> None:
        """The next `times` API requests (of `method`, when given) answer GitHub's `status`."""
        self.state.failing, self.state.failing_status, self.state.failing_method = times, status, method

    server_error = fail

    # --- the git part's checks, reviews and archives ------------------------------------------------

    def add_check_run(self, sha: str, name: str, *, conclusion: str | None = "success",
                      status: str = "completed") -> None:
        runs = self.state.check_runs.setdefault(sha, [])
        runs.append({"id": 5000 + len(runs), "name": name, "head_sha": sha, "status": status,
                     "conclusion": conclusion, "html_url": f"{self.state.web_url}/runs/{5000 + len(runs)}",
                     "details_url": None, "app": {"slug": "ci"}})

    def add_review(self, number: int, user: str, state: str, commit_id: str) -> None:
        reviews = self.state.reviews.setdefault(number, [])
        reviews.append({"id": 7000 + len(reviews), "user": {"login": user}, "state": state, "commit_id": commit_id,
                        "submitted_at": now(), "body": ""})

    def serve_tarball(self, archive: bytes | None) -> None:
        """Answer downloads with these bytes instead of the real archive (None: the real one again)."""
        self.state.tarball = archive


__all__ = ["GitHubServer"]
