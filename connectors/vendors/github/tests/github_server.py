"""GitHub's REST API on a local port, for the `github` driver's tests: a `VendorServer` answering
the endpoints the connector calls from `emulator.GitHub` (the same GitHub the fake emulates), with
what GitHub's HTTP layer adds around them:

- `Authorization: Bearer <token>` is required (else 401 "Bad credentials", GitHub's body);
- every answer carries GitHub's rate-limit headers (`x-ratelimit-limit`, `-remaining`, `-used`,
  `-reset`, `-resource`), counting down;
- `primary_limit(times, reset_in)`: the next requests answer 403 "API rate limit exceeded" with
  `x-ratelimit-remaining: 0` and `x-ratelimit-reset` that many seconds ahead;
- `secondary_limit(times, status=403|429, retry_after=...)`: the next requests answer GitHub's
  "You have exceeded a secondary rate limit" with `Retry-After` when given (GitHub sometimes names
  no wait: then its advice is to wait a minute);
- the base's faults (`fault(status=502)`, a slow answer, a dropped connection) and request log.

    with GitHubServer(token="ghp_x") as server:
        server.state["repos"]  # what GitHub holds
"""
from __future__ import annotations

import threading
import time
from typing import Any

from connectors.http.vendor_server import Answer, Received, VendorServer
from connectors.vendors.github.emulator import ROUTES, GitHub, initial_state

RATE_LIMIT_DOCS = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"


class GitHubServer(VendorServer):
    """The local GitHub (see the module's docstring); `state` is the organization's, `token` the one
    it accepts."""

    def __init__(self, *, token: str, org: str = "acme", state: dict[str, Any] | None = None,
                 limit: int = 5000) -> None:
        super().__init__("github")
        self.token = token
        self.state = state if state is not None else initial_state(org)
        self.limit = limit
        self.used = 0
        self.reset_at = int(time.time()) + 3600
        self._state_lock = threading.Lock()
        for method, pattern, _ in ROUTES:
            self.route(method, pattern)(self._answer)

    def __enter__(self) -> GitHubServer:
        self.start()
        return self

    def _headers(self, *, remaining: int | None = None, reset_at: int | None = None) -> dict[str, str]:
        left = max(0, self.limit - self.used) if remaining is None else remaining
        return {"x-ratelimit-limit": str(self.limit), "x-ratelimit-remaining": str(left),
                "x-ratelimit-used": str(self.used), "x-ratelimit-reset": str(reset_at or self.reset_at),
                "x-ratelimit-resource": "core", "X-GitHub-Api-Version-Selected": "2022-11-28"}

    def _answer(self, request: Received, params: dict[str, str]) -> Answer:
        if request.header("Authorization") != f"Bearer {self.token}":
            return Answer(401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"},
                          self._headers())
        try:
            body = request.json()
        except ValueError:
            return Answer(400, {"message": "Problems parsing JSON", "documentation_url": "https://docs.github.com/rest"})
        query = {k: v[-1] for k, v in request.query.items()}
        with self._state_lock:
            self.used += 1
            reply = GitHub(self.state, base=self.url).answer(request.method, request.path, query, body)
            headers = {**self._headers(), **reply.headers}
        return Answer(reply.status, reply.body, headers)

    # --- GitHub's rate limits -------------------------------------------------------------------------

    def primary_limit(self, times: int = 1, *, reset_in: float = 3.0, status: int = 403,
                      path: str | None = None) -> int:
        """The next `times` requests answer the primary rate limit; returns the reset (epoch seconds)."""
        reset_at = int(time.time() + reset_in)
        self.fault(status=status, times=times, path=path,
                   body={"message": "API rate limit exceeded for user ID 1. If you reach out to GitHub Support "
                                    "for help, please include the request ID.", "documentation_url": RATE_LIMIT_DOCS},
                   headers=self._headers(remaining=0, reset_at=reset_at))
        return reset_at

    def secondary_limit(self, times: int = 1, *, status: int = 403, retry_after: int | None = None,
                        path: str | None = None) -> None:
        """The next `times` requests answer a secondary rate limit (with `Retry-After` when given)."""
        headers = self._headers()
        if retry_after is not None:
            headers["Retry-After"] = str(retry_after)
        self.fault(status=status, times=times, path=path, headers=headers,
                   body={"message": "You have exceeded a secondary rate limit. Please wait a few minutes before "
                                    "you try again. If you reach out to GitHub Support for help, please include "
                                    "the request ID.", "documentation_url": RATE_LIMIT_DOCS})

    def server_error(self, times: int = 1, *, status: int = 502, path: str | None = None,
                     method: str | None = None) -> None:
        """The next `times` requests answer GitHub's 5xx."""
        self.fault(status=status, times=times, path=path, method=method,
                   body={"message": "Server Error", "documentation_url": "https://docs.github.com/rest"})


__all__ = ["GitHubServer"]
