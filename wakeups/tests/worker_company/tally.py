"""A vendor whose one write is NOT idempotent: every accepted call appends an effect.

Its fake honours idempotency keys (a repeated key gets the remembered reply and changes nothing),
so exactly-once at the vendor is visible in the fake's file: `state.effects` holds one entry per
accepted key, and `calls` logs every call with outcome `ok` or `repeat`.

For crash tests the fake's driver can be slowed down, read at call time from the environment:
TALLY_BEFORE_MS sleeps before the effect, TALLY_AFTER_MS after it (the effect is saved in the file
but the engine has not checkpointed it yet: a crash then makes the engine call again, and the fake
answers from its remembered reply).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from pydantic import BaseModel, Field

from connectors import CallContext, Driver, define_connector, op, with_setup
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


def _ms(name: str) -> float:
    try:
        return max(0.0, float(os.environ.get(name, "0"))) / 1000
    except ValueError:
        return 0.0


def make_fake(file: Path | None = None):
    fake = define_fake(
        vendor,
        initial=lambda: {"effects": []},
        ops={"entry": {"post": _post, "count": _count, "charge": _post}},
        file=file,
    )
    inner = fake.driver

    def slowed(op_id: str):
        def call(payload: BaseModel, context: CallContext):
            before, after = _ms("TALLY_BEFORE_MS"), _ms("TALLY_AFTER_MS")
            if before:
                time.sleep(before)
            reply = inner.call(op_id, payload, context)
            if after:
                time.sleep(after)
            return reply

        return call

    fake.driver = Driver(vendor=inner.vendor, functions={op_id: slowed(op_id) for op_id in inner.functions})
    return fake


tally = with_setup(vendor, fake=make_fake)
POST = tally.op("tally.entry.post")
