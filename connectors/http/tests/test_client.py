"""The vendor HTTP client against a local server: answers, the vendor's failures as DriverErrors,
the call's deadline and idempotency key."""
from __future__ import annotations

import email.utils
import socket
import time

import httpx
import pytest

from connectors.drivers import CallContext
from connectors.errors import DriverError, DriverTimeout, ErrorCode
from connectors.http import VendorFault, VendorHTTP, join_url, pages, parse_retry_after
from connectors.http.vendor_server import Answer, Received, VendorServer


def read_error(response: httpx.Response) -> VendorFault:
    error = response.json()["error"]
    return VendorFault(error["message"], error.get("code"))


@pytest.fixture
def server():
    vendor = VendorServer("acme")

    @vendor.route("GET", "/v1/things/{thing}")
    def get_thing(request: Received, params: dict[str, str]) -> Answer:
        return Answer(200, {"id": params["thing"], "key": request.header("Idempotency-Key")})

    @vendor.route("POST", "/v1/things")
    def make_thing(request: Received, params: dict[str, str]) -> Answer:
        body = request.json()
        if not body.get("name"):
            return Answer(400, {"error": {"message": "name is required", "code": "parameter_missing"}})
        return Answer(201, {"id": "t_1", "name": body["name"]})

    @vendor.route("GET", "/v1/plain")
    def plain(request: Received, params: dict[str, str]) -> Answer:
        return Answer(200, raw=b"<html>not json</html>")

    with vendor:
        yield vendor


def context(timeout: float | None = None) -> CallContext:
    return CallContext(idempotency_key="run_1:3", run_id="run_1", op_id="acme.thing.get", timeout=timeout,
                       deadline=None if timeout is None else time.time() + timeout)


def test_an_answer_is_read_as_json_and_the_key_sent_where_the_vendor_reads_it(server):
    http = VendorHTTP("acme", read_error=read_error)
    got = http.json("GET", join_url(server.url, "/v1/things/t_9"), context=context(5),
                    idempotency_header="Idempotency-Key")
    assert got == {"id": "t_9", "key": "run_1:3"}


def test_a_refusal_is_final_and_carries_the_vendors_message_and_code(server):
    http = VendorHTTP("acme", read_error=read_error)
    with pytest.raises(DriverError) as raised:
        http.json("POST", join_url(server.url, "/v1/things"), json={"name": ""})
    err = raised.value
    assert (err.status, err.vendor_code, err.retryable) == (400, "parameter_missing", False)
    assert str(err) == "acme answered 400 to POST /v1/things: name is required"


def test_a_rate_limit_is_retryable_with_the_wait_the_vendor_asked_for(server):
    http = VendorHTTP("acme", read_error=read_error)
    server.fault(status=429, body={"error": {"message": "slow down", "code": "rate_limited"}},
                 headers={"Retry-After": "7"})
    with pytest.raises(DriverError) as raised:
        http.json("GET", join_url(server.url, "/v1/things/a"))
    assert (raised.value.status, raised.value.retryable, raised.value.retry_after) == (429, True, 7.0)
    # the fault was used once: the next request is served
    assert http.json("GET", join_url(server.url, "/v1/things/a"))["id"] == "a"


def test_a_server_error_is_retryable_and_an_unreadable_error_body_still_gives_the_status(server):
    http = VendorHTTP("acme", read_error=read_error)
    server.fault(status=503, body=None)
    with pytest.raises(DriverError) as raised:
        http.json("GET", join_url(server.url, "/v1/things/a"))
    assert (raised.value.status, raised.value.retryable, raised.value.retry_after) == (503, True, None)
    assert str(raised.value) == "acme answered 503 to GET /v1/things/a"


def test_a_vendor_that_does_not_answer_by_the_calls_deadline_times_out_retryably(server):
    http = VendorHTTP("acme")
    server.fault(delay=2.0)
    started = time.monotonic()
    with pytest.raises(DriverTimeout) as raised:
        http.json("GET", join_url(server.url, "/v1/things/a"), context=context(0.3))
    assert time.monotonic() - started < 1.5
    assert raised.value.code == ErrorCode.DRIVER_TIMEOUT and raised.value.retryable is True


def test_a_vendor_that_cannot_be_reached_is_retryable():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(DriverError) as raised:
        VendorHTTP("acme").json("GET", f"http://127.0.0.1:{port}/v1/things/a")
    assert raised.value.retryable is True and "acme could not be reached for GET /v1/things/a" in str(raised.value)


def test_an_answer_that_is_not_json_is_a_final_failure(server):
    with pytest.raises(DriverError) as raised:
        VendorHTTP("acme").json("GET", join_url(server.url, "/v1/plain"))
    assert raised.value.retryable is False and "not JSON" in str(raised.value)


def test_retry_after_reads_seconds_and_dates_and_ignores_nonsense():
    now = time.time()
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after(email.utils.formatdate(now + 30, usegmt=True), now=now) == pytest.approx(30, abs=1)
    assert parse_retry_after(email.utils.formatdate(now - 30, usegmt=True), now=now) == 0.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None and parse_retry_after("nan") is None


def test_a_list_is_read_page_by_page_and_an_endless_one_is_refused():
    book = {None: ([1, 2], "b"), "b": ([3], "c"), "c": ([4], None)}
    assert list(pages(lambda cursor: book[cursor])) == [1, 2, 3, 4]
    with pytest.raises(DriverError, match="longer than 3 pages"):
        list(pages(lambda cursor: ([0], "again"), max_pages=3, vendor="acme"))


def test_the_gate_refuses_past_its_rate_and_counts_the_most_at_once(server):
    server.gate(per_second=3, retry_after=1)
    http = VendorHTTP("acme")
    statuses: list[int | None] = []
    for _ in range(5):
        try:
            http.json("GET", join_url(server.url, "/v1/things/a"))
            statuses.append(200)
        except DriverError as err:
            statuses.append(err.status)
    assert statuses == [200, 200, 200, 429, 429] and server.refused == 2 and server.max_in_flight == 1
