"""Calls of the limited vendor, one after another: the limits' process tests' workload."""
from pydantic import BaseModel

from runs.authoring import define_workflow

from ..meter import KEYED, SEND


class PingsInput(BaseModel):
    calls: int = 1
    account: str = "main"


def run(ctx, input: PingsInput):
    return {"ids": [ctx.meter.ping.send({"n": n, "account": input.account}).id for n in range(input.calls)]}


def run_keyed(ctx, input: PingsInput):
    return {"ids": [ctx.keyedmeter.ping.keyed({"n": n, "account": input.account}).id for n in range(input.calls)]}


pings = define_workflow(name="pings", input=PingsInput, uses=[SEND], run=run)
keyed_pings = define_workflow(name="keyed-pings", input=PingsInput, uses=[KEYED], run=run_keyed)
