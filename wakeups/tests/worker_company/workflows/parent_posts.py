"""Start a child run of five posts, post once itself, then wait for the child: the child-run crash
test's workload."""
from pydantic import BaseModel

from runs.authoring import define_workflow

from ..tally import POST


class ParentInput(BaseModel):
    label: str = ""


def run(ctx, input: ParentInput):
    child = ctx.start_run("five-posts", {"label": f"{input.label}-child"})
    own = ctx.tally.entry.post({"n": 0, "note": input.label})
    got = ctx.wait_run(child)
    return {"child": child, "own": own.entry_id, "child_entries": got["entries"]}


parent_posts = define_workflow(name="parent-posts", title="Parent of five posts", input=ParentInput,
                               uses=[POST, "start_run", "wait_run"], run=run)
