"""`chaos-child`: two calls at the parent's kind of vendor."""
from typing import Literal

from pydantic import BaseModel

from runs.authoring import define_workflow

from ..vendor import CHARGE, POST, RECONCILED_CHARGE


class ChildInput(BaseModel):
    vendor: Literal["honoured", "ignored", "reconciled"]


def call(ctx, vendor: str, n: int) -> str:
    """One effect at the chosen vendor; its reference is unique to this run and call."""
    payload = {"ref": f"{ctx.run_id}/{n}", "n": n}
    if vendor == "honoured":
        return ctx.chaos.honoured.post(payload).entry_id
    if vendor == "ignored":
        return ctx.chaos.ignored.charge(payload).entry_id
    return ctx.chaos.reconciled.charge(payload).entry_id


def run(ctx, input: ChildInput):
    return {"entries": [call(ctx, input.vendor, 0), call(ctx, input.vendor, 1)]}


child = define_workflow(name="chaos-child", title="Chaos: a child run", input=ChildInput,
                        uses=[POST, CHARGE, RECONCILED_CHARGE], run=run)
