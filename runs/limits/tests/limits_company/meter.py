"""A vendor over HTTP with published limits: its API (a local server in the tests) refuses a request
past 5 a second or past 2 at once, as real vendors do, with 429 and Retry-After.

`meter.ping.send` is limited by the connector (`5/s`, 2 at once); `meter.ping.keyed` by the
operation, per account (`5/s` for each account). The driver sends each call to `$METER_URL/v1/pings`
through the one HTTP client every driver uses; no retries of its own (the engine retries).
"""
from __future__ import annotations

import os

from pydantic import BaseModel

from connectors import CallContext, define_connector, op, with_setup
from connectors.drivers import define_driver
from connectors.http import VendorHTTP, join_url
from connectors.limits import Limit


class Ping(BaseModel):
    n: int
    account: str = "main"


class Pong(BaseModel):
    id: str


vendor = define_connector("meter", {
    "ping": {
        "send": op(effect="write", input=Ping, output=Pong, idempotent=True),
    },
}, limit=Limit(rate="5/s", concurrency=2))

keyed_vendor = define_connector("keyedmeter", {
    "ping": {
        "keyed": op(effect="write", input=Ping, output=Pong, idempotent=True,
                    limit=Limit(rate="5/s", key="account")),
    },
})

_http = VendorHTTP("meter")


def _send(i: Ping, c: CallContext) -> dict:
    url = join_url(os.environ["METER_URL"], "/v1/pings")
    return _http.json("POST", url, context=c, json={"n": i.n, "account": i.account, "key": c.idempotency_key})


meter = with_setup(vendor, driver=lambda: define_driver(vendor, {"ping": {"send": _send}}))
keyedmeter = with_setup(keyed_vendor, driver=lambda: define_driver(keyed_vendor, {"ping": {"keyed": _send}}))
SEND = meter.op("meter.ping.send")
KEYED = keyedmeter.op("keyedmeter.ping.keyed")
