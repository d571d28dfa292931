"""`manage.py show` lists a run's ledger in the order it was written: a call held for an approval
keeps its step's number, but is listed after the approval that let it through."""
from __future__ import annotations

import io
import subprocess
import sys

import pytest
from django.core.management import call_command
from django.db import connection

from runs.approvals import services as approvals
from runs.models import Run
from runs.policies import allow, approve, define_policy
from runs.testing import make_user
from runs.tests.fixtures import REFUND
from runs.tests.processes import REPO, database_url, worker_env
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


def shown_ledger(run_id: str) -> list[str]:
    out = io.StringIO()
    call_command("show", run_id, stdout=out)
    lines = out.getvalue().split("the step each record belongs to):\n")[1].splitlines()
    assert all(line == line.rstrip() for line in lines), lines  # no trailing blanks
    return lines


def test_the_deploys_records_say_what_they_did(engine_for):
    """As a user reads a run after deploys: the lines of a move, a pin, a reassigned and a
    released approval say from what to what, and why."""
    from runs.deploys import deploy
    from runs.tests.test_deploys import OTHER, flow, hold_refunds, inserted, parked, refunds_open, waits

    def holds(ctx, input):
        ctx.acme.order.refund({"order_id": "1", "amount": 10})
        return "refunded"

    def hold_for_carol(call):
        return approve("carol") if call.op["id"] == REFUND.id else allow()

    make_user("bob")
    make_user("carol")
    first = engine_for(flow(holds), OTHER, policy=define_policy(hold_refunds, version="v1"))
    run = first.start("parks")
    first.drain()
    deploy(config=first.config)
    second = engine_for(flow(holds), OTHER, policy=define_policy(hold_for_carol, version="v2"))
    deploy(config=second.config)
    third = engine_for(flow(holds), OTHER, policy=define_policy(refunds_open, version="v3"))
    deploy(config=third.config)
    lines = shown_ledger(run.id)
    v1, v2, v3 = (e.config.workflow_versions["parks"] for e in (first, second, third))
    assert "    2 approval.reassigned approval-1 from bob to carol" in lines, lines
    assert "    2 approval.released approval-1 (policy policy@v2 -> policy@v3)" in lines, lines
    assert f"    0 run.migrated from {v1} to {v2} (0 steps replayed)" in lines, lines
    assert f"    0 run.migrated from {v2} to {v3} (0 steps replayed)" in lines, lines

    pinned = parked(engine_for(flow(waits), OTHER))
    deploy(config=engine_for(flow(inserted), OTHER).config)
    assert (f"    1 run.pinned on {pinned.app_version}: step 2 was wait shipped, now call acme.mail.send"
            in shown_ledger(pinned.id))


@pytest.mark.django_db(transaction=True)
def test_show_into_head_exits_quietly(engine_for, tmp_path):
    """`manage.py show RUN | head`: the reader closes the pipe after a few lines; the command ends
    with no traceback and exit 0."""
    run = engine_for(shop_flow).run("shop-flow")
    Run.objects.filter(pk=run.pk).update(result=[f"line {i}" for i in range(50_000)])  # far more than a pipe holds
    env = worker_env(db_url=database_url(connection.settings_dict), var_dir=tmp_path / "var", version="",
                     root=REPO / "company")
    proc = subprocess.Popen([sys.executable, str(REPO / "manage.py"), "show", run.id], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(run.id)
    proc.stdout.close()  # what `head -n 1` does
    assert (proc.wait(timeout=120), proc.stderr.read()) == (0, "")
