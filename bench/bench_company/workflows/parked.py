"""`parked`: n trivial checkpointed calls, then a wait for a message that never comes: a parked
run with n + 1 recorded steps, for `bench/proof_cost.py`."""
from bench_company.vendor import DO
from pydantic import BaseModel, Field

from runs.authoring import define_workflow


class ParkedInput(BaseModel):
    n: int = Field(default=1, ge=0, le=1_000)


def run(ctx, input: ParkedInput):
    for i in range(input.n):
        ctx.bench.step.do({"n": i})
    ctx.wait_message("go")
    return {"steps": input.n}


parked = define_workflow(name="parked", title="N steps, then a wait", input=ParkedInput, uses=[DO, "wait_message"],
                         run=run)
