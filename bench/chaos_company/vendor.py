"""The chaos harness's vendor, `chaos`, as a real driver talking HTTP to a vendor server.

The vendor server (`bench/chaos_vendor.py`) runs in the harness's process, outside every worker:
an effect it took stays taken whatever happens to the worker that asked for it, and the harness
counts effects per idempotency key after the crashes. Three kinds of the same non-idempotent write:

- `honoured.post`: the vendor deduplicates on the idempotency key (a repeated key gets the first
  reply back and changes nothing).
- `ignored.charge`: the vendor ignores the key; every call it receives is an effect. A call that
  may have happened is in doubt until an operator (here the harness) says what happened.
- `reconciled.charge`: the same, with `reconciled.find`, a read that says whether a charge with
  this reference exists (the reconcile read that settles the doubt without an operator).

The vendor's address is read at call time from CHAOS_VENDOR_URL.
"""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any

from pydantic import BaseModel, Field

from connectors import CallContext, define_connector, define_driver, op, with_setup
from connectors.errors import DriverError

# Each call may take this long before it is abandoned (the vendor's slowest answer stays under it).
CALL_TIMEOUT_SECONDS = 10.0


class Effect(BaseModel):
    ref: str = Field(min_length=1, max_length=200)
    n: int = Field(ge=0)


class Took(BaseModel):
    entry_id: str
    ref: str


class Found(BaseModel):
    happened: bool
    output: Took | None = None


connector = define_connector(
    "chaos",
    {
        "honoured": {
            "post": op(effect="write", input=Effect, output=Took, timeout=CALL_TIMEOUT_SECONDS,
                       description="An effect at a vendor that honours idempotency keys"),
        },
        "ignored": {
            "charge": op(effect="money", input=Effect, output=Took, idempotency_key="ignored",
                         timeout=CALL_TIMEOUT_SECONDS, description="An effect at a vendor that ignores keys"),
        },
        "reconciled": {
            "charge": op(effect="money", input=Effect, output=Took, idempotency_key="ignored", reconcile="find",
                         timeout=CALL_TIMEOUT_SECONDS,
                         description="An effect at a vendor that ignores keys, with a reconcile read"),
            "find": op(effect="read", input=Effect, output=Found, idempotent=True, timeout=CALL_TIMEOUT_SECONDS,
                       description="Whether an effect with this reference exists"),
        },
    },
)


def _send(path: str, payload: BaseModel, context: CallContext) -> Any:
    base = os.environ.get("CHAOS_VENDOR_URL", "")
    if not base:
        raise DriverError("CHAOS_VENDOR_URL is not set: the chaos vendor's address", retryable=False)
    # The run, attempt and process are for the harness's counts (which worker to freeze mid-call).
    body = json.dumps({**payload.model_dump(mode="json"), "run": context.run_id, "attempt": context.attempt,
                       "pid": os.getpid()})
    request = urllib.request.Request(
        f"{base}{path}", data=body.encode(), method="POST",
        headers={"Content-Type": "application/json", "Idempotency-Key": context.idempotency_key})
    try:
        with urllib.request.urlopen(request, timeout=context.time_left() or CALL_TIMEOUT_SECONDS) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as err:
        raise DriverError(f"the chaos vendor answered {err.code}", status=err.code) from None
    except (OSError, ValueError) as err:  # refused, reset, timed out, or not JSON
        raise DriverError(f"the chaos vendor did not answer: {err}", retryable=False, cause=err) from None


def make_driver():
    return define_driver(connector, {
        "honoured": {"post": lambda i, c: _send("/honoured/post", i, c)},
        "ignored": {"charge": lambda i, c: _send("/ignored/charge", i, c)},
        "reconciled": {"charge": lambda i, c: _send("/reconciled/charge", i, c),
                       "find": lambda i, c: _send("/reconciled/find", i, c)},
    }, env={"CHAOS_VENDOR_URL": "the chaos vendor server's address, http://127.0.0.1:<port>"})


chaos = with_setup(connector, driver=make_driver)
POST = chaos.op("chaos.honoured.post")
CHARGE = chaos.op("chaos.ignored.charge")
RECONCILED_CHARGE = chaos.op("chaos.reconciled.charge")
