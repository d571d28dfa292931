"""The example shop's HTTP driver against a local server that answers like the shop's API: the
credentials and idempotency key it sends, the call's deadline bounding the request, a 429's
Retry-After, and a 404 read as `gone`."""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from company.vendors.shop import make_driver, shop
from connectors import CallContext, DriverError

HANG_SECONDS = 3.0
SECRETS = {"SHOP_API_KEY": "sk_test_0123456789"}


class ShopAPI(BaseHTTPRequestHandler):
    seen: list[dict[str, str]] = []

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def _answer(self, status: int, body: object, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.seen.append({"path": self.path, "auth": self.headers.get("Authorization", ""),
                          "key": self.headers.get("Idempotency-Key", "")})
        if self.path == "/orders/1001":
            self._answer(200, {"order_id": "1001", "customer": "ada@example.com", "total_cents": 4200})
        elif self.path == "/orders/hang":
            time.sleep(HANG_SECONDS)
            self._answer(200, {"order_id": "hang", "customer": "x@example.com", "total_cents": 1})
        elif self.path == "/orders/busy":
            self._answer(429, {"error": "too many requests"}, {"Retry-After": "7"})
        else:
            self._answer(404, {"error": "not found"})


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # the hanging request's client gave up on purpose: its broken pipe is expected


@pytest.fixture
def api() -> Iterator[str]:
    ShopAPI.seen = []
    server = QuietServer(("127.0.0.1", 0), ShopAPI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    SECRETS["SHOP_API_URL"] = f"http://127.0.0.1:{server.server_address[1]}"
    yield SECRETS["SHOP_API_URL"]
    server.shutdown()
    server.server_close()


def context(op_id: str, timeout: float = 5.0) -> CallContext:
    return CallContext(idempotency_key="run-1:1", run_id="run-1", op_id=op_id, timeout=timeout,
                       deadline=time.time() + timeout, secrets=dict(SECRETS))


def call(op_id: str, payload: dict, timeout: float = 5.0):
    op = shop.op(op_id)
    return make_driver().call(op_id, op.input.model_validate(payload), context(op_id, timeout))


def test_the_driver_sends_its_key_and_the_idempotency_key_and_reads_the_order(api):
    order = call("shop.order.get", {"order_id": "1001"})
    assert order["customer"] == "ada@example.com"
    assert ShopAPI.seen == [{"path": "/orders/1001", "auth": "Bearer sk_test_0123456789", "key": "run-1:1"}]


def test_the_calls_deadline_bounds_the_request(api):
    began = time.monotonic()
    with pytest.raises(DriverError) as failed:
        call("shop.order.get", {"order_id": "hang"}, timeout=0.5)
    assert failed.value.retryable is True and "timed out" in failed.value.message
    assert time.monotonic() - began < HANG_SECONDS  # it gave up before the shop answered


def test_a_429_carries_the_shops_retry_after(api):
    with pytest.raises(DriverError) as failed:
        call("shop.order.get", {"order_id": "busy"})
    assert (failed.value.status, failed.value.retryable, failed.value.retry_after) == (429, True, 7.0)


def test_without_its_url_and_key_the_driver_says_what_to_set(api):
    op = shop.op("shop.order.get")
    bare = CallContext(idempotency_key="run-1:1", run_id="run-1", op_id=op.id)
    with pytest.raises(DriverError, match="SHOP_API_URL and SHOP_API_KEY must be set"):
        make_driver().call(op.id, op.input.model_validate({"order_id": "1001"}), bare)


def test_a_product_the_shop_does_not_have_is_gone(api):
    observed = call("shop.product.read", {"id": "no-such-sku"})
    assert observed == {"id": "no-such-sku", "gone": True}
