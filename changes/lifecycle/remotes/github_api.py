"""GitHub's REST API over HTTP, for the GitHub remote (`changes.lifecycle.remotes.github`): its
headers and version, pages, redirects that keep the token on GitHub's host, and its failures (rate
limits with their waits, refusals, server errors) as `RemoteError`s."""
from __future__ import annotations

import email.utils
import http.client
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from email.message import Message
from http.client import HTTPMessage
from typing import IO, Any

from connectors.errors import RemoteError, retryable_status

API_VERSION = "2022-11-28"
USER_AGENT = "sanoma-changes (+https://github.com)"
SECONDARY_LIMIT_WAIT = 60.0  # GitHub's advice when a secondary rate limit names no wait
MAX_PAGES = 10  # lists are read 100 a page: at most this many pages


class GitHubAPI:
    """GitHub's REST API over HTTP, as `GitHubRemote` calls it: requests with its headers and the
    token (read at every request, never in a message), lists read page by page, and GitHub's
    failures read as `RemoteError`s (retryable when trying later may help)."""

    api_url: str
    token: Callable[[], str | None]
    timeout: float
    max_archive_bytes: int
    _opener: urllib.request.OpenerDirector

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


class SameHostAuthRedirects(urllib.request.HTTPRedirectHandler):
    """Follows redirects, keeping `Authorization` only while the host stays the same (GitHub's
    tarball redirects to a download host whose URL carries a token of its own)."""

    def redirect_request(self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str,
                         headers: HTTPMessage, newurl: str) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(newurl) != _origin(req.full_url):
            new.remove_header("Authorization")
        return new


def _origin(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


def _read(reply: IO[bytes], what: str, size: int = -1) -> bytes:
    """A read of GitHub's answer; one that breaks off may go through on a later try."""
    try:
        return reply.read(size)
    except (http.client.HTTPException, OSError) as err:
        raise RemoteError(f"GitHub's answer to {what} broke off: {err!r}", retryable=True) from None


def _message_of(payload: Any) -> str:
    """GitHub's `message`, with the validation errors' own messages after it."""
    if not isinstance(payload, dict):
        return ""
    said = str(payload.get("message") or "")
    details = [str(e.get("message") or e.get("code") or "") for e in payload.get("errors") or [] if isinstance(e, dict)]
    details = [d for d in details if d]
    return f"{said} ({'; '.join(details)})" if details else said


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


__all__ = ["API_VERSION", "MAX_PAGES", "GitHubAPI", "SameHostAuthRedirects"]
