"""GitHub's REST API over HTTP: the one client the `github` connector's driver and the change
workflow's GitHub remote (`changes.lifecycle.remotes.github`) both use.

It is a `connectors.http.VendorHTTP` (httpx) speaking GitHub's dialect:

- every request carries `Accept: application/vnd.github+json`, `X-GitHub-Api-Version: 2022-11-28`,
  a `User-Agent`, and `Authorization: Bearer <token>` with the token read at that request (a
  rotated token is used at once; the token never appears in a message or a repr);
- a list is read 100 a page, following `Link: rel="next"`;
- redirects are followed (a renamed repository's 301, a tarball's 302 to the download host), the
  token kept only while the host stays GitHub's API host;
- a failure is a `DriverError` with GitHub's `message` (and its validation `errors`' messages), the
  status, and `data = {status, message, documentation_url}`; a rate limit is retryable with
  `retry_after`: the primary one (403 or 429 with `x-ratelimit-remaining: 0`) until
  `x-ratelimit-reset`, a secondary one (its `Retry-After`, else GitHub's advice of 60 s). 401 and
  other 403s are final.

Nothing here retries: the engine does, durably for a long wait, and only idempotent operations.
"""
from __future__ import annotations

import re
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from connectors.drivers import CallContext
from connectors.errors import DriverError, DriverTimeout
from connectors.http import VendorFault, VendorHTTP, join_url, pages, parse_retry_after, read_json

if TYPE_CHECKING:
    import httpx  # imported at the first request: see connectors.http.client

PUBLIC_API = "https://api.github.com"
API_VERSION = "2022-11-28"
USER_AGENT = "sanoma (+https://github.com)"
SECONDARY_LIMIT_WAIT = 60.0  # GitHub's advice when a secondary rate limit names no wait
PER_PAGE = 100
MAX_PAGES = 10  # a list is read at most this many pages of 100
MAX_REDIRECTS = 5
REDIRECTS = (301, 302, 303, 307, 308)


def read_fault(response: httpx.Response) -> VendorFault | None:
    """GitHub's error body `{message, documentation_url, errors}` as a fault: its message with the
    validation errors' own messages after it."""
    payload = response.json()
    if not isinstance(payload, dict):
        return None
    return VendorFault(message_of(payload), None)


def message_of(payload: Mapping[str, Any]) -> str:
    """GitHub's `message`, with the validation errors' messages (or codes) after it in brackets."""
    said = str(payload.get("message") or "")
    details = [str(e.get("message") or e.get("code") or "") for e in payload.get("errors") or [] if isinstance(e, dict)]
    details = [d for d in details if d]
    return f"{said} ({'; '.join(details)})" if details else said


def rate_limit_wait(response: httpx.Response, said: str) -> float | None:
    """The seconds GitHub asks to wait when this answer is a rate limit; None when it is not one."""
    if response.status_code not in (403, 429):
        return None
    headers = response.headers
    retry_after = parse_retry_after(headers.get("retry-after"))
    if retry_after is not None:
        return retry_after
    if headers.get("x-ratelimit-remaining") == "0":
        try:
            return max(0.0, float(headers.get("x-ratelimit-reset") or "") - time.time())
        except ValueError:
            return SECONDARY_LIMIT_WAIT
    if "secondary rate limit" in said.lower() or response.status_code == 429:
        return SECONDARY_LIMIT_WAIT
    return None


class GitHubHTTP(VendorHTTP):
    """`VendorHTTP` reading GitHub's error bodies and rate limits (see the module's docstring)."""

    def __init__(self, *, timeout: float, transport: httpx.BaseTransport | None = None) -> None:
        super().__init__("GitHub", read_error=read_fault, timeout=timeout, transport=transport,
                         headers={"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION,
                                  "User-Agent": USER_AGENT})

    def error(self, response: httpx.Response, what: str) -> DriverError:
        fault = self._fault(response)
        said = fault.message if fault is not None else ""
        status = response.status_code
        data: dict[str, Any] = {"status": status, "message": said}
        docs = _documentation_url(response)
        if docs:
            data["documentation_url"] = docs
        wait = rate_limit_wait(response, said)
        if wait is not None:
            err = DriverError(f"GitHub's rate limit: it answered {status} to {what}: {said or 'rate limited'}",
                              status=status, retryable=True, retry_after=wait)
        else:
            hint = " (check the GITHUB_TOKEN credential)" if status == 401 else ""
            text = f"GitHub answered {status} to {what}" + (f": {said}" if said else "") + hint
            err = DriverError(text, status=status, retry_after=parse_retry_after(response.headers.get("retry-after"))
                              if status >= 500 else None)
        err.data = data
        return err


def _documentation_url(response: httpx.Response) -> str | None:
    try:
        payload = response.json()
    except ValueError:
        return None
    docs = payload.get("documentation_url") if isinstance(payload, dict) else None
    return docs if isinstance(docs, str) else None


class GitHubClient:
    """GitHub's REST API at `api_url`, authorized by `token()` (read at every request)."""

    def __init__(self, api_url: str = PUBLIC_API, *, token: Callable[[], str | None], timeout: float = 30.0,
                 transport: httpx.BaseTransport | None = None, http: GitHubHTTP | None = None) -> None:
        self.api_url = api_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        # `http` shares one connection pool between clients (a driver's, one per call's token and URL).
        self.http = http if http is not None else GitHubHTTP(timeout=timeout, transport=transport)

    def __repr__(self) -> str:  # never the token
        return f"GitHubClient(api_url={self.api_url!r})"

    def url(self, path: str, query: Mapping[str, Any] | None = None) -> str:
        """The API's URL of `path` (a full URL is kept), with `query` added."""
        url = join_url(self.api_url, path)
        if query:
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(query)
        return url

    def request(self, method: str, path: str, *, json: Any = None, query: Mapping[str, Any] | None = None,
                context: CallContext | None = None) -> httpx.Response:
        """One request (redirects followed), its answer when under 400; a `DriverError` otherwise."""
        url = self.url(path, query)
        token = self.token()
        try:
            for _ in range(MAX_REDIRECTS + 1):
                response = self.http.request(method, url, json=json, context=context, headers=self._auth(url, token))
                if response.status_code not in REDIRECTS or "location" not in response.headers:
                    return response
                url = str(response.url.join(response.headers["location"]))
                if response.status_code == 303 or (response.status_code in (301, 302) and method != "GET"):
                    method, json = "GET", None
        except DriverError as err:
            raise _scrubbed(err, token) from None
        import httpx

        raise DriverError(f"GitHub redirected {method} {httpx.URL(url).path} more than {MAX_REDIRECTS} times",
                          retryable=False)

    def call(self, method: str, path: str, *, json: Any = None, query: Mapping[str, Any] | None = None,
             context: CallContext | None = None) -> Any:
        """`request`, and the answer's JSON (None for an empty body, as a 204's)."""
        return read_json("GitHub", self.request(method, path, json=json, query=query, context=context))

    def items(self, path: str, query: Mapping[str, Any] | None = None, *, key: str | None = None,
             context: CallContext | None = None, max_pages: int = MAX_PAGES) -> list[Any]:
        """A list endpoint's items, 100 a page, following `Link: rel="next"` (at most `max_pages` pages:
        a longer list is refused rather than cut short). `key` names the list in an object answer
        (`check_runs`)."""
        def fetch(cursor: str | None) -> tuple[list[Any], str | None]:
            response = self.request("GET", cursor or path, query=None if cursor else {**(query or {}),
                                                                                       "per_page": PER_PAGE},
                                    context=context)
            data = read_json("GitHub", response)
            items = (data or {}).get(key, []) if key else (data or [])
            return list(items), next_link(response.headers.get("link"))

        return [*pages(fetch, max_pages=max_pages, vendor="GitHub")]

    @contextmanager
    def stream(self, method: str, path: str) -> Iterator[httpx.Response]:
        """An answer read as it arrives (a tarball), redirects followed as `request` does."""
        import httpx

        url, token = self.url(path), self.token()
        what = f"{method} {httpx.URL(url).path}"
        try:
            for _ in range(MAX_REDIRECTS + 1):
                request = self.http.client.build_request(method, url, headers=self._auth(url, token))
                try:
                    response = self.http.client.send(request, stream=True)
                except httpx.TimeoutException as err:
                    raise DriverTimeout(f"GitHub did not answer {what} within {self.timeout:g} s", retryable=True,
                                        cause=err) from None
                except httpx.TransportError as err:
                    raise DriverError(f"GitHub could not be reached for {what}: {err}", retryable=True,
                                      cause=err) from None
                try:
                    if response.status_code in REDIRECTS and "location" in response.headers:
                        url = str(response.url.join(response.headers["location"]))
                        continue
                    if response.status_code >= 400:
                        response.read()
                        raise self.http.error(response, what)
                    yield response
                    return
                finally:
                    response.close()
        except DriverError as err:
            raise _scrubbed(err, token) from None
        raise DriverError(f"GitHub redirected {what} more than {MAX_REDIRECTS} times", retryable=False)

    def _auth(self, url: str, token: str | None) -> dict[str, str]:
        """The token, only for the API's own host (a download host's URL carries a token of its own)."""
        if token and _origin(url) == _origin(self.api_url):
            return {"Authorization": f"Bearer {token}"}
        return {}

    def close(self) -> None:
        self.http.close()


def next_link(link: str | None) -> str | None:
    """The URL of `rel="next"` in a `Link` header."""
    for part in (link or "").split(","):
        matched = re.match(r'\s*<([^>]+)>\s*;.*\brel="?next"?', part)
        if matched:
            return matched[1]
    return None


def _origin(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


def _scrubbed(err: DriverError, token: str | None) -> DriverError:
    """The error with the token taken out of its message, should any answer have echoed it."""
    if not token or token not in err.message:
        return err
    clean = DriverError(err.message.replace(token, "[token]"), status=err.status, retryable=err.retryable,
                        vendor_code=err.vendor_code, retry_after=err.retry_after)
    clean.data = {k: (v.replace(token, "[token]") if isinstance(v, str) else v) for k, v in err.data.items()}
    return clean


def quote(text: str, safe: str = "") -> str:
    """A path segment of a GitHub URL."""
    return urllib.parse.quote(text, safe=safe)


__all__ = ["API_VERSION", "MAX_PAGES", "PUBLIC_API", "SECONDARY_LIMIT_WAIT", "GitHubClient", "GitHubHTTP",
           "message_of", "next_link", "quote", "rate_limit_wait", "read_fault"]
