"""Read the tally's count: an idempotent call the vendor may rate-limit, tried again later."""
from runs.authoring import define_workflow

from ..tally import tally


def run(ctx, input):
    return {"effects": ctx.tally.entry.count({}).effects}


count_later = define_workflow(name="count-later", title="Count, later if need be",
                              uses=[tally.op("tally.entry.count")], run=run)
