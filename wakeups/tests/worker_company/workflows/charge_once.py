"""One charge at a vendor that ignores idempotency keys: a call that may have happened is in doubt."""
from runs.authoring import define_workflow

from ..tally import tally


def run(ctx, input):
    return {"entry": ctx.tally.entry.charge({"n": 1, "note": "charge"}).entry_id}


charge_once = define_workflow(name="charge-once", title="Charge once", uses=[tally.op("tally.entry.charge")],
                              run=run)
