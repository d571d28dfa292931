"""One payment at a vendor that ignores keys, with a reconcile read: a call in doubt is settled by
asking the vendor, once the attempt in doubt can no longer land."""
from runs.authoring import define_workflow

from ..tally import tally


def run(ctx, input):
    return {"entry": ctx.tally.entry.pay({"n": 1, "note": "pay"}).entry_id}


pay_once = define_workflow(name="pay-once", title="Pay once", uses=[tally.op("tally.entry.pay")], run=run)
