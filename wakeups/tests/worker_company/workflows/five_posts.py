"""Five non-idempotent calls in a row: the crash test's workload."""
from pydantic import BaseModel

from runs.authoring import define_workflow

from ..tally import POST


class FiveInput(BaseModel):
    label: str = ""


def run(ctx, input: FiveInput):
    ids = []
    for n in range(5):
        posted = ctx.tally.entry.post({"n": n, "note": input.label})
        ids.append(posted.entry_id)
    return {"entries": ids}


five_posts = define_workflow(name="five-posts", title="Five posts", input=FiveInput, uses=[POST], run=run)
