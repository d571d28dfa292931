"""Sleep until a moment, then record when it woke: the resumption-delay workload."""
from pydantic import BaseModel

from runs.authoring import define_workflow
from worker_company.tally import POST


class NapInput(BaseModel):
    until_ms: int


def run(ctx, input: NapInput):
    ctx.sleep(until=input.until_ms)
    woke = ctx.now()
    posted = ctx.tally.entry.post({"n": 0, "note": "woke"})
    return {"woke_at": woke.isoformat(), "entry": posted.entry_id}


nap = define_workflow(name="nap", title="Nap", input=NapInput, uses=[POST, "sleep"], run=run)
