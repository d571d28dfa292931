"""`held`: one call, then an approval asked of `approver` (a person or `group:<name>`)."""
from bench_company.vendor import DO
from pydantic import BaseModel

from runs.authoring import define_workflow


class HeldInput(BaseModel):
    approver: str = "group:approvers"


def run(ctx, input: HeldInput):
    ctx.bench.step.do({"n": 0})
    ctx.approval("Let it through", approver=input.approver)
    return {"approved": True}


held = define_workflow(name="held", title="A call, then an approval", input=HeldInput, uses=[DO, "approval"],
                       run=run)
