"""`waits`: one call, then a wait for a message on `go` that the bench never sends."""
from bench_company.vendor import DO
from pydantic import BaseModel

from runs.authoring import define_workflow


class WaitsInput(BaseModel):
    n: int = 0


def run(ctx, input: WaitsInput):
    ctx.bench.step.do({"n": input.n})
    return ctx.wait_message("go")


waits = define_workflow(name="waits", title="A call, then a wait for a message", input=WaitsInput,
                        uses=[DO, "wait_message"], run=run)
