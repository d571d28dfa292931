"""A vendor's HTTP API on a local port, for driver tests.

A vendor's test server declares the routes of the vendor's documented API and answers as it does
(status codes, error bodies, pagination, idempotency); this base gives it the parts every vendor
shares: routing with path parameters, every request kept for the test to read, faults queued for
the next matching requests (a 429 with `Retry-After`, a 5xx, a slow answer, a dropped connection),
and a gate that refuses requests past a rate or a number at once, counting what it refused and the
most it ever saw at once.

    server = VendorServer("stripe")

    @server.route("POST", "/v1/refunds")
    def create_refund(request: Received, params: dict[str, str]) -> Answer:
        return Answer(200, {"id": "re_1", "object": "refund"})

    with server:
        server.fault(status=429, headers={"Retry-After": "2"})
        ... drive the driver at server.url ...
"""
from __future__ import annotations

import json
import re
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    """One request as the server got it."""

    method: str
    path: str
    query: Mapping[str, list[str]]
    headers: Mapping[str, str]  # names lower-cased
    body: bytes
    at: float  # time.monotonic() when it arrived

    def json(self) -> Any:
        return json.loads(self.body) if self.body.strip() else None

    def form(self) -> dict[str, str]:
        """A form-encoded body (`a=1&b[c]=2`), one value per key (the last one)."""
        return {k: v[-1] for k, v in urllib.parse.parse_qs(self.body.decode(), keep_blank_values=True).items()}

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass
class Answer:
    """What the server answers: a status, a body (JSON unless `raw`), headers."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None


Handler = Callable[[Received, dict[str, str]], Answer]


@dataclass
class _Fault:
    answer: Answer | None  # None: no answer of its own, only the delay (or the drop)
    delay: float
    drop: bool
    method: str | None
    path: str | None
    times: int


class VendorServer:
    """A threaded HTTP server on 127.0.0.1 answering a vendor's routes (see the module's docstring)."""

    def __init__(self, name: str = "vendor") -> None:
        self.name = name
        self.received: list[Received] = []
        self.refused = 0  # requests the gate answered 429
        self.in_flight = 0
        self.max_in_flight = 0
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = []
        self._faults: list[_Fault] = []
        self._lock = threading.Lock()
        self._gate: tuple[float, int | None, float] | None = None  # (per second, at once, retry after)
        self._recent: deque[float] = deque()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- declaring the API -------------------------------------------------------------

    def route(self, method: str, pattern: str) -> Callable[[Handler], Handler]:
        """Serve `method pattern` with the decorated function; `{name}` in the pattern is a path parameter."""
        regex = re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", pattern) + "$")

        def add(handler: Handler) -> Handler:
            self._routes.append((method.upper(), regex, handler))
            return handler

        return add

    def fault(self, *, status: int | None = None, body: Any = None, headers: Mapping[str, str] | None = None,
              delay: float = 0.0, drop: bool = False, method: str | None = None, path: str | None = None,
              times: int = 1) -> None:
        """The next `times` requests matching `method` and `path` (a prefix; any when None) are answered
        `status` with `body` and `headers` after `delay` seconds instead of by their route; with no
        status they are only delayed, then served; `drop` closes the connection without an answer."""
        answer = Answer(status, body, dict(headers or {})) if status is not None else None
        with self._lock:
            self._faults.append(_Fault(answer, delay, drop, method.upper() if method else None, path, times))

    def gate(self, *, per_second: float, at_once: int | None = None, retry_after: float = 1.0) -> None:
        """Refuse with 429 (and `Retry-After`) a request past `per_second` in any second, or past
        `at_once` requests in flight; `refused` counts them."""
        self._gate = (per_second, at_once, retry_after)

    # ---- running -----------------------------------------------------------------------

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError(f"the {self.name} server is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> VendorServer:
        handler = _handler_for(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name=f"{self.name}-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> VendorServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def requests_to(self, method: str, path: str) -> list[Received]:
        """The requests received for `method path` (an exact path)."""
        with self._lock:
            return [r for r in self.received if r.method == method.upper() and r.path == path]

    # ---- serving -----------------------------------------------------------------------

    def _take_fault(self, method: str, path: str) -> _Fault | None:
        with self._lock:
            for fault in self._faults:
                if (fault.method is None or fault.method == method) and (fault.path is None or
                                                                          path.startswith(fault.path)):
                    fault.times -= 1
                    if fault.times <= 0:
                        self._faults.remove(fault)
                    return fault
        return None

    def _gated(self, now: float) -> Answer | None:
        """A 429 when the request is past the gate's rate or concurrency; counts it in flight otherwise."""
        with self._lock:
            if self._gate is not None:
                per_second, at_once, retry_after = self._gate
                while self._recent and self._recent[0] <= now - 1.0:
                    self._recent.popleft()
                if len(self._recent) >= per_second or (at_once is not None and self.in_flight >= at_once):
                    self.refused += 1
                    return Answer(429, {"error": {"message": "Too many requests"}},
                                  {"Retry-After": f"{retry_after:g}"})
                self._recent.append(now)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        return None

    def _serve(self, received: Received) -> Answer | None:
        with self._lock:
            self.received.append(received)
        fault = self._take_fault(received.method, received.path)
        if fault is not None:
            if fault.delay:
                time.sleep(fault.delay)
            if fault.drop:
                return None
            if fault.answer is not None:
                return fault.answer
        refused = self._gated(received.at)
        if refused is not None:
            return refused
        try:
            for method, regex, handler in self._routes:
                matched = regex.match(received.path)
                if matched and method == received.method:
                    return handler(received, matched.groupdict())
            return Answer(404, {"error": {"message": f"no route for {received.method} {received.path}"}})
        finally:
            with self._lock:
                self.in_flight -= 1


def _handler_for(server: VendorServer) -> type[BaseHTTPRequestHandler]:
    class VendorHandler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            split = urllib.parse.urlsplit(self.path)
            received = Received(method=self.command, path=split.path, query=urllib.parse.parse_qs(split.query),
                                headers={k.lower(): v for k, v in self.headers.items()}, body=body,
                                at=time.monotonic())
            answer = server._serve(received)
            if answer is None:  # a dropped connection: no status line at all
                self.close_connection = True
                return
            payload = answer.raw if answer.raw is not None else (
                b"" if answer.body is None else json.dumps(answer.body).encode())
            self.send_response(answer.status)
            headers = {"Content-Type": "application/json", **answer.headers}
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    return VendorHandler
