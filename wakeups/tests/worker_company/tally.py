"""A vendor whose one write is NOT idempotent: every accepted call appends an effect.

Its fake honours idempotency keys (a repeated key gets the remembered reply and changes nothing),
so exactly-once at the vendor is visible in the fake's file: `state.effects` holds one entry per
accepted key, and `calls` logs every call with outcome `ok` or `repeat`.

For crash tests the fake's driver can be slowed down, read at call time from the environment:
TALLY_BEFORE_MS sleeps before the effect, TALLY_AFTER_MS after it (the effect is saved in the file
but the engine has not checkpointed it yet: a crash then makes the engine call again, and the fake
answers from its remembered reply).

`tally.entry.pay` is a vendor that ignores keys (every call is an effect) with a reconcile read
(`tally.entry.find`: did the call with this run's key happen?). It bounds its processing by the
call's deadline, as a reconcile read presumes: a request it would carry out past the deadline is
dropped. TALLY_FIRST_PAY_LANDS_AFTER_MS makes a first attempt land that late (in flight meanwhile).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from pydantic import BaseModel, Field

from connectors import CallContext, Driver, DriverError, define_connector, op, with_setup
from connectors.fakes import define_fake


class Entry(BaseModel):
    n: int = Field(ge=0)
    note: str = ""


class Posted(BaseModel):
    entry_id: str
    n: int


class Nothing(BaseModel):
    pass


class Count(BaseModel):
    effects: int


class Found(BaseModel):
    happened: bool
    output: Posted | None = None


# The pay operation's timeout: an attempt may land until this long after it was sent, never later.
PAY_TIMEOUT_SECONDS = 20.0


vendor = define_connector(
    "tally",
    {
        "entry": {
            "post": op(effect="write", input=Entry, output=Posted, idempotent=False,
                       description="Append an entry (not idempotent: each call is an effect)"),
            "count": op(effect="read", input=Nothing, output=Count, idempotent=True,
                        description="How many entries there are"),
            "charge": op(effect="money", input=Entry, output=Posted, idempotency_key="ignored",
                         description="Append an entry at a vendor that ignores idempotency keys"),
            "pay": op(effect="money", input=Entry, output=Posted, idempotency_key="ignored", reconcile="find",
                      timeout=PAY_TIMEOUT_SECONDS,
                      description="Append an entry at a vendor that ignores keys, with a reconcile read"),
            "find": op(effect="read", input=Entry, output=Found, idempotent=True,
                       description="Whether the call with this run's key took effect, and its reply"),
        },
    },
)


def _post(state: dict, i: Entry, c: CallContext) -> dict:
    entry_id = f"e{len(state['effects']) + 1}"
    state["effects"].append({"entry_id": entry_id, "key": c.idempotency_key, "run": c.run_id, "n": i.n,
                             "attempt": c.attempt})
    return {"entry_id": entry_id, "n": i.n}


def _count(state: dict, i: Nothing, c: CallContext) -> dict:
    return {"effects": len(state["effects"])}


def _find(state: dict, i: Entry, c: CallContext) -> dict:
    for effect in state["effects"]:
        if effect["key"] == c.idempotency_key:
            return {"happened": True, "output": {"entry_id": effect["entry_id"], "n": effect["n"]}}
    return {"happened": False}


def _ms(name: str) -> float:
    try:
        return max(0.0, float(os.environ.get(name, "0"))) / 1000
    except ValueError:
        return 0.0


def make_fake(file: Path | None = None):
    fake = define_fake(
        vendor,
        initial=lambda: {"effects": []},
        ops={"entry": {"post": _post, "count": _count, "charge": _post, "pay": _post, "find": _find}},
        file=file,
    )
    inner = fake.driver

    def slowed(op_id: str):
        def call(payload: BaseModel, context: CallContext):
            before, after = _ms("TALLY_BEFORE_MS"), _ms("TALLY_AFTER_MS")
            if before:
                time.sleep(before)
            if op_id == "tally.entry.pay":
                if context.attempt == 1:
                    time.sleep(_ms("TALLY_FIRST_PAY_LANDS_AFTER_MS"))  # in flight; lands late
                if context.deadline is not None and time.time() > context.deadline:
                    raise DriverError("tally dropped a payment request past its deadline", retryable=False)
            reply = inner.call(op_id, payload, context)
            if after:
                time.sleep(after)
            return reply

        return call

    fake.driver = Driver(vendor=inner.vendor, functions={op_id: slowed(op_id) for op_id in inner.functions})
    return fake


tally = with_setup(vendor, fake=make_fake)
POST = tally.op("tally.entry.post")
