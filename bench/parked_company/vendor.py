"""`parkedbench.step.do`: a vendor call that does almost nothing, on an in-memory fake."""
from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from connectors import CallContext, define_connector, op, with_setup
from connectors.fakes import define_fake


class StepIn(BaseModel):
    n: int


class StepOut(BaseModel):
    n: int
    done: int


vendor = define_connector(
    "parkedbench",
    {"step": {"do": op(effect="write", input=StepIn, output=StepOut, description="A trivial call")}},
)


def _do(state: dict, i: StepIn, c: CallContext) -> dict:
    state["done"] += 1
    return {"n": i.n, "done": state["done"]}


def make_fake(file: Path | None = None):
    return define_fake(vendor, initial=lambda: {"done": 0}, ops={"step": {"do": _do}})


parkedbench = with_setup(vendor, fake=make_fake)
DO = parkedbench.op("parkedbench.step.do")
