"""`nap`: one call, then a sleep until a moment (a day ahead in the bench)."""
from bench_company.vendor import DO
from pydantic import BaseModel

from runs.authoring import define_workflow


class NapInput(BaseModel):
    until_ms: int


def run(ctx, input: NapInput):
    ctx.bench.step.do({"n": 0})
    ctx.sleep(until=input.until_ms)
    return {"woke": True}


nap = define_workflow(name="nap", title="A call, then a sleep", input=NapInput, uses=[DO, "sleep"], run=run)
