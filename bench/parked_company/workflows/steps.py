"""`steps`: n trivial checkpointed calls in a row (the step measured beside the parked runs)."""
from bench_company.vendor import DO
from pydantic import BaseModel, Field

from runs.authoring import define_workflow


class StepsInput(BaseModel):
    n: int = Field(default=10, ge=0, le=1_000)


def run(ctx, input: StepsInput):
    for i in range(input.n):
        ctx.bench.step.do({"n": i})
    return {"steps": input.n}


steps = define_workflow(name="steps", title="N trivial steps", input=StepsInput, uses=[DO], run=run)
