"""One vendor's HTTP API as its driver calls it, over httpx.

Every first-party driver sends its requests through a `VendorHTTP`: it bounds each request by the
call's deadline (`CallContext.time_left()`), sends the call's idempotency key in the header the
vendor reads, and turns whatever goes wrong into a `DriverError` the engine knows how to treat:

- no connection: `DriverError` (or `DriverTimeout` when connecting took too long), retryable;
- sent, and no answer in time or the connection dropped before the answer: `DriverTimeout` or
  `DriverError`, retryable, with `may_have_acted`: the vendor may have done it (the engine settles
  a call that takes no idempotency key by its reconcile read, never by sending it again blindly);
- an error status: `DriverError` with the `status`, the vendor's own message and code (read by the
  vendor's `read_error`), and `retry_after` from the vendor's `Retry-After` (seconds or a date) or
  whatever else the vendor says (`retry_after=`). 408, 429 and 5xx are retryable; the rest final.

Nothing here retries: the engine does (`runs.engine.calls`), durably when the wait is long, and
only for idempotent operations. One `VendorHTTP` per driver keeps one connection pool; the URL and
credentials come with each request, read from `CallContext.secrets`, so a rotated key is used at once.

httpx is imported, and the pool made, at a driver's first request, not when the driver is made: every
`manage.py` command resolves the config, which makes each connector's driver, and most never call a
vendor (httpx, and the httpcore and trio it imports, are about a tenth of a second of each start).
"""
from __future__ import annotations

import email.utils
import json as jsonlib
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from connectors.drivers import CallContext
from connectors.errors import DriverError, DriverTimeout
from connectors.limits import departing

if TYPE_CHECKING:
    import httpx

DEFAULT_TIMEOUT = 30.0  # seconds, for a request made outside a call (a resource read)
MAX_PAGES = 50  # a list is read at most this many pages


@dataclass(frozen=True)
class VendorFault:
    """What a vendor's error body says: its message and its own code."""

    message: str
    vendor_code: str | None = None


# Reads the vendor's error body; None when it has nothing to say beyond the status.
ErrorReader = Callable[["httpx.Response"], VendorFault | None]
# The seconds the vendor asks to wait before the next request, from its answer; None when it says none.
WaitReader = Callable[["httpx.Response"], float | None]


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """The seconds a `Retry-After` header asks for: `120` or an HTTP date; None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds or seconds in (float("inf"), float("-inf")):  # NaN or infinite
        return None
    return max(0.0, seconds)


def retry_after_header(response: httpx.Response) -> float | None:
    """The default `WaitReader`: the answer's `Retry-After`."""
    return parse_retry_after(response.headers.get("Retry-After"))


def require_secrets(vendor: str, context: CallContext, *names: str) -> dict[str, str]:
    """The named credentials from the call's secrets; a final `DriverError` naming the missing ones."""
    found = {name: context.secrets.get(name) or "" for name in names}
    missing = [name for name, value in found.items() if not value]
    if missing:
        raise DriverError(f"{vendor}: {', '.join(missing)} must be set to call {vendor} "
                          f"(the environment or `manage.py credentials set`)", retryable=False)
    return found


def join_url(base: str, path: str) -> str:
    """`base` and `path` with one slash between them; a full URL in `path` is kept as it is."""
    if path.startswith(("http://", "https://")):
        return path
    return base.rstrip("/") + "/" + path.lstrip("/")


# Every client holder made in this process, for `warm`.
_made: weakref.WeakSet[VendorHTTP] = weakref.WeakSet()


def warm() -> None:
    """Make every vendor's client now: a worker does before it forks its processes, so that each
    process's first call does not pay httpx's import and its client's making (a few tenths of a
    second on a busy machine), as when the clients were made with their drivers."""
    for http in list(_made):
        http.client  # noqa: B018  (the property makes it)


class VendorHTTP:
    """One vendor's requests, on one pooled httpx client (safe to share between threads)."""

    def __init__(
        self,
        vendor: str,
        *,
        read_error: ErrorReader | None = None,
        read_wait: WaitReader = retry_after_header,
        headers: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.vendor = vendor
        self.read_error = read_error
        self.read_wait = read_wait
        self.timeout = timeout
        self._headers = dict(headers or {})
        self._transport = transport
        self._client: httpx.Client | None = None
        self._making = threading.Lock()
        _made.add(self)

    @property
    def client(self) -> httpx.Client:
        """The pooled httpx client, made at the first request (see the module's docstring)."""
        client = self._client
        if client is None:
            with self._making:
                client = self._client
                if client is None:
                    import httpx

                    # A limited call's start time is waited for as the request leaves
                    # (`connectors.limits.departing`).
                    client = self._client = httpx.Client(
                        headers=self._headers, timeout=self.timeout, transport=self._transport,
                        follow_redirects=False, event_hooks={"request": [_departing]})
        return client

    def request(
        self,
        method: str,
        url: str,
        *,
        context: CallContext | None = None,
        json: Any = None,
        data: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        idempotency_header: str | None = None,
    ) -> httpx.Response:
        """Send one request and return its answer when its status is under 400; raise a `DriverError` otherwise.

        `idempotency_header` names the header the vendor reads the call's idempotency key from
        (Stripe's `Idempotency-Key`): sent with the key of `context`, the same on every retry."""
        import httpx

        sent = dict(headers or {})
        if idempotency_header:
            if context is None:
                raise ValueError("an idempotency header needs the call's context")
            sent[idempotency_header] = context.idempotency_key
        left = context.time_left() if context is not None else None
        timeout = self.timeout if left is None else left
        what = f"{method} {httpx.URL(url).path}"
        try:
            response = self.client.request(method, url, json=json, data=data, params=params, headers=sent,
                                           timeout=timeout)
        except (httpx.ConnectTimeout, httpx.PoolTimeout) as err:
            raise DriverTimeout(f"{self.vendor} could not be reached for {what} within {timeout:g} s",
                                retryable=True, cause=err) from None
        except httpx.TimeoutException as err:  # sent, or being sent, and no answer in time
            raise DriverTimeout(f"{self.vendor} did not answer {what} within {timeout:g} s", retryable=True,
                                cause=err, may_have_acted=True) from None
        except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError) as err:
            raise DriverError(f"{self.vendor} dropped the connection before answering {what}: {err}",
                              retryable=True, cause=err, may_have_acted=True) from None
        except httpx.TransportError as err:
            raise DriverError(f"{self.vendor} could not be reached for {what}: {err}", retryable=True,
                              cause=err) from None
        if response.status_code >= 400:
            raise self.error(response, what)
        return response

    def json(self, method: str, url: str, **kwargs: Any) -> Any:
        """`request`, and the answer's JSON body (None for an empty body)."""
        response = self.request(method, url, **kwargs)
        return read_json(self.vendor, response)

    def error(self, response: httpx.Response, what: str) -> DriverError:
        """The `DriverError` an error answer means."""
        fault = self._fault(response)
        message = f"{self.vendor} answered {response.status_code} to {what}"
        if fault is not None and fault.message:
            message += f": {fault.message}"
        return DriverError(message, status=response.status_code,
                           vendor_code=fault.vendor_code if fault is not None else None,
                           retry_after=self.read_wait(response))

    def _fault(self, response: httpx.Response) -> VendorFault | None:
        if self.read_error is None:
            return None
        try:
            return self.read_error(response)
        except (ValueError, KeyError, TypeError, AttributeError):
            return None  # an error body not of the documented shape: the status says enough

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def _departing(request: httpx.Request) -> None:
    departing()


def read_json(vendor: str, response: httpx.Response) -> Any:
    """The answer's JSON body (None when empty); a final `DriverError` when it is not JSON."""
    if not response.content.strip():
        return None
    try:
        return jsonlib.loads(response.content)
    except ValueError:
        raise DriverError(f"{vendor}'s answer to {response.request.method} {response.request.url.path} is not JSON",
                          status=response.status_code, retryable=False) from None


def pages(fetch: Callable[[str | None], tuple[list[Any], str | None]], *, max_pages: int = MAX_PAGES,
          vendor: str = "the vendor") -> Iterator[Any]:
    """The items of a list read page by page: `fetch(cursor)` answers a page's items and the next
    page's cursor (None on the last page). A list longer than `max_pages` pages is refused rather than
    read forever or cut short without a word."""
    cursor: str | None = None
    for _ in range(max_pages):
        items, cursor = fetch(cursor)
        yield from items
        if cursor is None:
            return
    raise DriverError(f"{vendor}'s list is longer than {max_pages} pages: narrow the query", retryable=False)
