"""`manage.py show` lists a run's ledger in the order it was written: a call held for an approval
keeps its step's number, but is listed after the approval that let it through."""
from __future__ import annotations

import io

from django.core.management import call_command

from runs.approvals import services as approvals
from runs.policies import define_policy
from runs.testing import make_user
from runs.tests.test_approvals import hold_money, shop_flow


def test_a_held_call_is_listed_after_its_approval(engine_for):
    engine = engine_for(shop_flow, policy=define_policy(hold_money, version="v1"))
    make_user("finance-lead")
    run = engine.run("shop-flow")
    approvals.decide(run_id=run.id, decision="approve", by="finance-lead", timeout=0)
    engine.drain()
    out = io.StringIO()
    call_command("show", run.id, stdout=out)
    ledger = out.getvalue().split("ledger")[1].splitlines()
    assert ledger[0] == " (in the order written; the number is the step each record belongs to):", ledger
    lines = [line.split() for line in ledger[1:] if line.strip()]
    assert [(int(seq), kind) + ((rest[0],) if kind == "op.called" else ()) for seq, kind, *rest in lines] == [
        (0, "run.started"),
        (1, "op.called", "acme.order.get"),
        (3, "approval.requested"),
        (3, "approval.decided"),
        (2, "op.called", "acme.order.refund"),
        (4, "op.called", "acme.mail.send"),
        (5, "run.finished"),
    ], out.getvalue()
