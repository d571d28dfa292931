"""The local Stripe server answers as Stripe's documented API does (read with plain httpx, not the
driver): the idempotency replay header, a key reused with other parameters, errors and pages."""
from __future__ import annotations

import httpx
import pytest

from connectors.vendors.stripe.tests.stripe_server import API_KEY, StripeServer, decode_form


@pytest.fixture
def server():
    with StripeServer() as running:
        yield running


def post(server: StripeServer, path: str, form: dict, key: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {API_KEY}"}
    if key:
        headers["Idempotency-Key"] = key
    return httpx.post(server.url + path, data=form, headers=headers)


def test_forms_decode_as_stripe_reads_them():
    assert decode_form(b"a=1&list%5B0%5D=x&list%5B1%5D=y&map%5Bk%5D=v") == {
        "a": "1", "list": ["x", "y"], "map": {"k": "v"}}


def test_a_replayed_key_says_so_and_other_params_are_an_idempotency_error(server):
    pi = server.pay(1000)
    first = post(server, "/v1/refunds", {"payment_intent": pi, "amount": 100}, key="k1")
    again = post(server, "/v1/refunds", {"payment_intent": pi, "amount": 100}, key="k1")
    assert first.status_code == again.status_code == 200 and first.json() == again.json()
    assert "Idempotent-Replayed" not in first.headers and again.headers["Idempotent-Replayed"] == "true"
    other = post(server, "/v1/refunds", {"payment_intent": pi, "amount": 200}, key="k1")
    assert other.status_code == 400 and other.json()["error"]["type"] == "idempotency_error"
    assert len(server.refunds_of(pi)) == 1


def test_a_refusal_on_its_params_is_not_saved_under_the_key(server):
    missing = post(server, "/v1/refunds", {}, key="k2")
    assert missing.status_code == 400
    assert missing.json()["error"] == {"type": "invalid_request_error", "code": "parameter_missing",
                                       "param": "payment_intent", "message": "Missing required param: payment_intent."}
    pi = server.pay(1000)
    assert post(server, "/v1/refunds", {"payment_intent": pi, "amount": 100}, key="k2").status_code == 200


def test_an_answer_without_the_key_is_401_and_each_has_a_request_id(server):
    refused = httpx.get(server.url + "/v1/refunds", headers={"Authorization": "Bearer sk_test_wrong"})
    assert refused.status_code == 401 and refused.json()["error"]["type"] == "invalid_request_error"
    assert refused.headers["Request-Id"].startswith("req_")


def test_lists_page_newest_first_with_has_more(server):
    pi = server.pay(10_000)
    for n in range(5):
        post(server, "/v1/refunds", {"payment_intent": pi, "amount": 10}, key=f"p{n}")
    auth = {"Authorization": f"Bearer {API_KEY}"}
    first = httpx.get(server.url + "/v1/refunds", params={"limit": 2}, headers=auth).json()
    ids = [r["id"] for r in reversed(server.refunds_of(pi))]
    assert (first["object"], first["has_more"], [r["id"] for r in first["data"]]) == ("list", True, ids[:2])
    last = httpx.get(server.url + "/v1/refunds", params={"limit": 2, "starting_after": ids[3]}, headers=auth).json()
    assert (last["has_more"], [r["id"] for r in last["data"]]) == (False, ids[4:])
    too_many = httpx.get(server.url + "/v1/refunds", params={"limit": 101}, headers=auth)
    assert too_many.status_code == 400 and too_many.json()["error"]["param"] == "limit"


def test_a_webhook_endpoints_secret_is_in_its_create_only(server):
    made = post(server, "/v1/webhook_endpoints", {"url": "https://a.example/h", "enabled_events[0]": "*"}).json()
    assert made["secret"].startswith("whsec_")
    auth = {"Authorization": f"Bearer {API_KEY}"}
    assert "secret" not in httpx.get(f"{server.url}/v1/webhook_endpoints/{made['id']}", headers=auth).json()
    assert "secret" not in httpx.get(f"{server.url}/v1/webhook_endpoints", headers=auth).json()["data"][0]
