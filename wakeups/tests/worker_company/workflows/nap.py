"""Sleep until a moment (`until_ms`) or for a while (`after_ms`), record when it woke, then post once."""
from pydantic import BaseModel, model_validator

from runs.authoring import define_workflow

from ..tally import POST


class NapInput(BaseModel):
    until_ms: int | None = None  # epoch ms
    after_ms: int | None = None  # from the moment the sleep is reached: its deadline is always ahead then

    @model_validator(mode="after")
    def one_of(self) -> "NapInput":
        if (self.until_ms is None) == (self.after_ms is None):
            raise ValueError("give until_ms or after_ms")
        return self


def run(ctx, input: NapInput):
    if input.until_ms is not None:
        ctx.sleep(until=input.until_ms)
    else:
        ctx.sleep(ms=input.after_ms)
    woke = ctx.now()
    posted = ctx.tally.entry.post({"n": 0, "note": "woke"})
    return {"woke_at": woke.isoformat(), "entry": posted.entry_id}


nap = define_workflow(name="nap", title="Nap", input=NapInput, uses=[POST, "sleep"], run=run)
