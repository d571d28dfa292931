"""`nap`: sleep until a moment, then record the moment it resumed (ctx.now, step 2)."""
from pydantic import BaseModel

from runs.authoring import define_workflow


class NapInput(BaseModel):
    until_ms: int


def run(ctx, input: NapInput):
    ctx.sleep(until=input.until_ms)
    return {"woke_at": ctx.now().isoformat()}


nap = define_workflow(name="nap", title="Nap", input=NapInput, uses=["sleep"], run=run)
