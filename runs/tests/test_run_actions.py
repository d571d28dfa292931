"""What ending a run does, and the run page's actions on every surface but the browser (that is
runs/tests/test_desk_journeys_run.py):

- an approval of a run that ended (cancelled, failed, a child cancelled with its parent) is
  withdrawn by the runtime in the transaction that ends the run, with a record naming why, and
  leaves every inbox;
- cancelling asks why everywhere, and the ledger names who cancelled;
- fork and rerun answer what they would do (the steps reused and made live, with their effects)
  before they do it, writing nothing;
- a run's page is one snapshot, even when the run ends while the page is read.
"""
from __future__ import annotations

import io
import json
import re
import threading

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from pydantic import BaseModel
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from connectors import DriverError
from connectors.errors import InvalidInput, SanomaError, error_code
from runs import ledger, services
from runs.approvals.selectors import pending_for
from runs.approvals.services import decide
from runs.authoring import define_workflow
from runs.engine import clock, transitions
from runs.engine.transitions import RUNTIME_ACTOR
from runs.models import Approval, LedgerRecord, Run, RunStatus
from runs.seed import seed_person
from runs.tests.fixtures import GET, REFUND, SEND

OPERATOR_PERMS = ("runs.view_any_run", "runs.operate_runs", "runs.rerun_runs", "runs.start_workflow")


# -- workflows -------------------------------------------------------------------------------------


def _ask_finance(ctx, input):
    ctx.approval("Refund needs finance", approver="bob")
    return {}


asks = define_workflow(name="asks", uses=["approval"], run=_ask_finance)


class NowNeedsAnOrder(BaseModel):
    order_id: str


def _ask_about_order(ctx, input: NowNeedsAnOrder):
    ctx.approval(f"Refund {input.order_id} needs finance", approver="bob")
    return {}


# The next version of `asks` takes an order: a run started before it no longer matches its input.
asks_v2 = define_workflow(name="asks", input=NowNeedsAnOrder, uses=["approval"], run=_ask_about_order)


def _parent_of_asker(ctx, input):
    return ctx.wait_run(ctx.start_run("asks", {}))


parent = define_workflow(name="parent", uses=["start_run", "wait_run"], run=_parent_of_asker)


class Refund(BaseModel):
    order_id: str = "1"
    amount: int = 500


def _refund_and_tell(ctx, input: Refund):
    refunded = ctx.acme.order.refund({"order_id": input.order_id, "amount": input.amount})  # step 1
    mail = ctx.acme.mail.send({"to": "customer", "text": f"refunded {refunded.refund_id}"})  # step 2
    return {"refund": refunded.refund_id, "mail": mail.id}


refund_and_tell = define_workflow(name="refund-and-tell", input=Refund, uses=[REFUND, SEND], run=_refund_and_tell)


def _fails_fast(ctx, input):
    return ctx.acme.order.get({"order_id": "no-such-order"})  # the vendor answers 404: the run fails at once


fails_fast = define_workflow(name="fails-fast", uses=[GET], run=_fails_fast)


# -- helpers ---------------------------------------------------------------------------------------


def api_for(username: str, *perms: str) -> APIClient:
    user = seed_person(username=username, perms=perms, staff=True)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def desk_for(username: str, *perms: str, superuser: bool = False) -> Client:
    client = Client()
    client.force_login(seed_person(username=username, perms=perms, staff=True, superuser=superuser))
    return client


def post(client: APIClient, url: str, body: dict | None = None):
    return client.post(url, data=json.dumps(body) if body is not None else None, content_type="application/json")


def written() -> tuple[int, int, int]:
    return Run.objects.count(), LedgerRecord.objects.count(), Approval.objects.count()


def withdrawal_of(run: Run) -> LedgerRecord:
    [record] = LedgerRecord.objects.filter(run_id=run.id, kind="approval.withdrawn")
    return record


# -- approvals end with their run ------------------------------------------------------------------


def test_cancelling_a_run_withdraws_its_pending_approval_as_the_runtime_and_it_leaves_the_inbox(engine_for):
    engine = engine_for(asks)
    bob = api_for("bob")
    run = engine.run("asks")
    assert [a.run_id for a in pending_for(principal="bob")] == [run.id]
    assert bob.get("/api/approvals").json()["count"] == 1
    assert '<strong class="sanoma-badge">1</strong>' in desk_for("bob").get("/admin/").content.decode()

    services.cancel(run_id=run.id, by="alice", reason="the customer called back")

    approval = Approval.objects.get(run_id=run.id)
    assert (approval.status, approval.decided_by, approval.note) == ("withdrawn", RUNTIME_ACTOR,
                                                                     "its run was cancelled")
    record = withdrawal_of(run)
    assert record.actor == RUNTIME_ACTOR
    assert record.body == {"approval": "approval-1", "by": RUNTIME_ACTOR, "reason": "its run was cancelled",
                           "run_status": "cancelled"}
    # Written with the end, before it: the run's `run.cancelled` stays the last word of its chain.
    chain = list(LedgerRecord.objects.filter(run_id=run.id).order_by("chain_index").values_list("kind", flat=True))
    assert chain[-2:] == ["approval.withdrawn", "run.cancelled"]
    assert not ledger.verify(run.id).breaks
    # Gone from every inbox: the selector, the API, the badge.
    assert list(pending_for(principal="bob")) == []
    assert bob.get("/api/approvals").json()["count"] == 0
    assert 'class="sanoma-badge"' not in desk_for("bob").get("/admin/").content.decode()
    # And nobody can decide it: the run ended.
    with pytest.raises(SanomaError) as refused:
        decide(run_id=run.id, decision="approve", by="bob", timeout=0)
    assert error_code(refused.value) == "run_ended"


def test_a_run_failing_with_an_approval_pending_withdraws_it_in_the_transaction_that_ends_it(engine_for):
    """A deploy changes the input a waiting run was started with: woken, the run fails, and the
    approval it waited for is closed with it."""
    first = engine_for(asks)
    run = first.run("asks")
    assert Approval.objects.get(run_id=run.id).status == "pending"
    deployed = engine_for(asks_v2)
    transitions.stamp(run_id=run.id, from_version=run.app_version,
                      to_version=deployed.config.workflow_versions["asks"], now=clock.now())
    transitions.wake(run_id=run.id, now=clock.now())
    deployed.drain()

    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    approval = Approval.objects.get(run_id=run.id)
    assert (approval.status, approval.decided_by, approval.note) == ("withdrawn", RUNTIME_ACTOR, "its run failed")
    assert withdrawal_of(run).body["reason"] == "its run failed"
    chain = list(LedgerRecord.objects.filter(run_id=run.id).order_by("chain_index").values_list("kind", flat=True))
    assert chain[-2:] == ["approval.withdrawn", "run.failed"]
    assert not ledger.verify(run.id).breaks
    assert list(pending_for(principal="bob")) == []


def test_a_child_cancelled_with_its_parent_withdraws_its_approval(engine_for):
    engine = engine_for(asks, parent)
    run = engine.run("parent")
    child = Run.objects.get(parent=run)
    assert Approval.objects.get(run=child).status == "pending"

    services.cancel(run_id=run.id, by="alice", reason="order withdrawn")

    child.refresh_from_db()
    assert child.status == RunStatus.CANCELLED
    approval = Approval.objects.get(run=child)
    assert (approval.status, approval.decided_by) == ("withdrawn", RUNTIME_ACTOR)
    [cancelled] = LedgerRecord.objects.filter(run_id=child.id, kind="run.cancelled")
    assert (cancelled.actor, cancelled.body["reason"]) == ("alice", "order withdrawn")
    assert cancelled.body["because"] == f"its parent run {run.id} was cancelled"
    assert list(pending_for(principal="bob")) == []


def test_an_approval_decided_before_the_end_keeps_its_decision(engine_for):
    engine = engine_for(define_workflow(name="two", uses=["approval"], run=lambda ctx, input: [
        ctx.approval("First", approver="bob"), ctx.approval("Second", approver="bob")]))
    run = engine.run("two")
    decide(run_id=run.id, decision="approve", by="bob", timeout=0)
    engine.drain()
    services.cancel(run_id=run.id, by="alice", reason="enough")
    assert dict(Approval.objects.filter(run_id=run.id).values_list("title", "status")) == {
        "First": "approved", "Second": "withdrawn"}


# -- cancelling asks why, and the ledger names who cancelled ------------------------------------------


@pytest.mark.parametrize("reason", ["", "   ", "\n"])
def test_a_cancel_without_a_reason_is_refused_on_every_surface_and_changes_nothing(engine_for, reason):
    engine = engine_for(asks)
    run = engine.run("asks")
    seed_person(username="olga", perms=OPERATOR_PERMS, staff=True)
    before = written()

    with pytest.raises(InvalidInput) as refused:
        services.cancel(run_id=run.id, by="olga", reason=reason)
    assert refused.value.data["issues"][0]["path"] == ["reason"]
    api = api_for("olga", *OPERATOR_PERMS)
    for body in ({}, {"reason": reason}):
        answer = post(api, f"/api/runs/{run.id}/cancel", body)
        assert answer.status_code == 400 and answer.json()["issues"][0]["path"] == ["reason"], answer.content
    bulk = post(api, "/api/bulk/cancel", {"workflow": "asks", "expect": 1, "reason": reason})
    assert bulk.status_code == 400 and "Say why" in bulk.json()["error"]
    with pytest.raises(CommandError, match="Say why the run is cancelled"):
        call_command("cancel", run.id, "--reason", reason, "--as", "olga", stdout=io.StringIO())
    with pytest.raises(CommandError, match="--reason"):
        call_command("cancel", run.id, "--as", "olga", stdout=io.StringIO())
    desk = desk_for("olga", *OPERATOR_PERMS)
    page = desk.post(f"/admin/runs/run/{run.id}/cancel/", {"confirmed": "yes", "reason": reason})
    assert page.status_code == 400 and "Say why the run is cancelled" in page.content.decode()

    assert written() == before and Run.objects.get(pk=run.id).status == RunStatus.WAITING


def test_the_canceller_is_the_actor_of_run_cancelled_and_the_run_page_says_who_and_why(engine_for):
    engine = engine_for(asks)
    run = engine.run("asks")  # started by alice
    answer = post(api_for("olga", *OPERATOR_PERMS), f"/api/runs/{run.id}/cancel", {"reason": "  duplicate order  "})
    assert answer.status_code == 200 and answer.json()["status"] == "cancelled"
    [record] = LedgerRecord.objects.filter(run_id=run.id, kind="run.cancelled")
    assert (record.actor, record.body) == ("olga", {"by": "olga", "reason": "duplicate order"})

    page = desk_for("olga", *OPERATOR_PERMS).get(f"/admin/runs/run/{run.id}/change/").content.decode()
    now = re.search(r'<p id="run-now"[^>]*>(.*?)</p>', page, re.S)
    assert now is not None
    said = re.sub(r"<[^>]+>", "", now.group(1))
    assert said.startswith("Cancelled ") and said.endswith("by olga: “duplicate order”.")
    assert "by olga: duplicate order" in page  # its line in the timeline


def test_the_cancel_command_says_who_cancelled_and_why(engine_for):
    engine = engine_for(asks)
    run = engine.run("asks")
    out = io.StringIO()
    call_command("cancel", run.id, "--reason", "test order", "--as", "alice", stdout=out)
    assert out.getvalue().strip() == f"{run.id} cancelled by alice: test order"


# -- fork and rerun say what they would do first --------------------------------------------------


def test_the_api_answers_a_dry_fork_of_a_finished_refund_with_the_mail_it_would_send_again(engine_for):
    engine = engine_for(refund_and_tell)
    api = api_for("ops", *OPERATOR_PERMS)
    run = engine.run("refund-and-tell")
    assert run.status == RunStatus.FINISHED
    before, calls = written(), len(engine.fake.calls)

    dry = post(api, f"/api/runs/{run.id}/fork", {"from_step": 2, "dry_run": True})

    assert dry.status_code == 200, dry.content
    plan = dry.json()
    assert (plan["run_id"], plan["act"], plan["from_step"], plan["effects"]) == (run.id, "fork", 2, ["send"])
    assert [(s["seq"], s["name"], s["effect"], s["outcome"]) for s in plan["reused"]] == [
        (1, "acme.order.refund", "money", "ok")]
    assert [(s["seq"], s["kind"], s["name"], s["effect"]) for s in plan["live"]] == [
        (2, "call", "acme.mail.send", "send")]
    assert "calls acme.mail.send again" in plan["live"][0]["what"]
    assert written() == before and len(engine.fake.calls) == calls  # nothing written, nothing called

    whole = post(api, f"/api/runs/{run.id}/fork", {"from_step": 1, "dry_run": True}).json()
    assert (whole["reused"], whole["effects"]) == ([], ["money", "send"])
    assert post(api, f"/api/runs/{run.id}/fork", {"from_step": 9, "dry_run": True}).status_code == 400
    typo = post(api, f"/api/runs/{run.id}/fork", {"from_step": 2, "dryrun": True})
    assert typo.status_code == 400 and written() == before  # a misspelt dry_run forks nothing

    forked = post(api, f"/api/runs/{run.id}/fork", {"from_step": 2})
    assert forked.status_code == 201
    engine.drain()
    assert [c["op"] for c in engine.fake.calls[calls:] if c["outcome"] != "error"] == ["acme.mail.send"]


def test_the_api_answers_a_dry_rerun_writing_nothing(engine_for):
    engine = engine_for(refund_and_tell)
    api = api_for("ops", *OPERATOR_PERMS)
    engine.fake.fail_next("acme.mail.send", DriverError("mail down", retryable=False))
    run = engine.run("refund-and-tell")
    assert run.status == RunStatus.FAILED
    before = written()
    dry = post(api, f"/api/runs/{run.id}/rerun", {"dry_run": True})
    assert dry.status_code == 200, dry.content
    plan = dry.json()
    assert (plan["act"], plan["from_step"], plan["reused"], plan["effects"]) == ("rerun", None, [], ["money", "send"])
    assert [(s["name"], s["outcome"]) for s in plan["live"]] == [("acme.order.refund", "ok"),
                                                                 ("acme.mail.send", "driver_failed")]
    assert written() == before
    assert post(api, f"/api/runs/{run.id}/rerun").status_code == 201  # no body: the rerun itself


def test_the_commands_list_what_is_made_live_again_before_acting(engine_for):
    engine = engine_for(refund_and_tell)
    seed_person(username="ops", perms=OPERATOR_PERMS)
    run = engine.run("refund-and-tell")
    before = written()
    out = io.StringIO()
    call_command("fork", run.id, "--from", "2", "--dry-run", "--as", "ops", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == f"Fork {run.id} (refund-and-tell, finished) from step 2 onto the current code:"
    assert "    step 1: call acme.order.refund [money] (was ok): acme.order.refund: its recorded reply is reused, " \
           "not called again" in lines
    assert any(line.startswith("    step 2: call acme.mail.send [send] (was ok): calls acme.mail.send again")
               for line in lines)
    assert "  done again at the vendors: send" in lines
    with pytest.raises(CommandError, match="not forked: confirm with --yes"):
        call_command("fork", run.id, "--from", "2", "--as", "ops", stdout=io.StringIO())
    assert written() == before


# -- the run page is one snapshot ----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_run_page_read_while_the_run_fails_says_one_thing(engine_for, monkeypatch):
    """Right after Start, a run failing fast between the page's reads made the page say "Queued"
    (or "Running on ...") with a Cancel button beside the status "failed". The run fails here in
    another connection, committed, while the page is being read."""
    engine = engine_for(fails_fast)
    run = engine.start("fails-fast")
    ended = threading.Event()
    drained: list = []
    real = ledger.records_of

    def records_of(run_id: str):
        if not ended.is_set():
            ended.set()

            def worker() -> None:
                try:
                    drained.append(engine.drain())
                except Exception as err:  # a locked database, say: the assertion below shows it
                    drained.append(err)
                finally:
                    connection.close()

            thread = threading.Thread(target=worker)
            thread.start()
            thread.join()
            assert Run.objects.using("default").filter(pk=run_id).exists()
        return real(run_id)

    monkeypatch.setattr(ledger, "records_of", records_of)
    root = desk_for("root", superuser=True)
    page = root.get(f"/admin/runs/run/{run.id}/change/").content.decode()
    assert drained == [1], drained  # the run was advanced (and failed) meanwhile, in another connection
    now = re.search(r'<p id="run-now"[^>]*>(.*?)</p>', page, re.S)
    status = re.search(r'<div class="[^"]*fieldBox field-status[^"]*">.*?<div class="readonly">([^<]*)</div>', page,
                       re.S)
    assert now is not None and status is not None, page
    # Everything on the page says what one read saw: queued, with a Cancel button and no end drawn.
    assert (now.group(1).split(" since")[0], status.group(1).strip()) == ("Queued for a worker", "Queued")
    assert 'id="cancel-link"' in page and 'data-kind="end"' not in page
    assert "<title>fails-fast " + run.id + " (queued) |" in page
    crumb = re.search(r'class="sanoma-run-status" data-status="([^"]+)"', page)
    assert crumb is not None and crumb.group(1) == "queued"
    # The next read sees the failure, all of it.
    monkeypatch.setattr(ledger, "records_of", real)
    again = root.get(f"/admin/runs/run/{run.id}/change/").content.decode()
    assert "Failed " in again and 'id="cancel-link"' not in again and 'data-kind="end"' in again
    assert Run.objects.get(pk=run.id).status == RunStatus.FAILED


def test_the_end_of_a_run_is_drawn_once_not_finished_finished(engine_for):
    engine = engine_for(define_workflow(name="done", run=lambda ctx, input: {}))
    run = engine.run("done")
    page = desk_for("root", superuser=True).get(f"/admin/runs/run/{run.id}/change/").content.decode()
    end = re.search(r'<li class="sanoma-node end finished".*?</li>', page, re.S)
    assert end is not None
    assert " ".join(re.sub(r"<[^>]+>", " ", end.group(0)).split()) == "finished"


# -- the message page ------------------------------------------------------------------------------------


def test_a_refused_message_is_said_on_the_page_beside_its_field_with_what_was_typed(engine_for):
    engine = engine_for(define_workflow(name="word", uses=["wait_message"],
                                        run=lambda ctx, input: ctx.wait_message("go")))
    run = engine.run("word")
    root = desk_for("root", superuser=True)
    bad = root.post(f"/admin/runs/run/{run.id}/message/", {"topic": "go", "payload": "[1]", "message_id": "m-1"})
    body = bad.content.decode()
    assert bad.status_code == 400 and "Not sent:" in body and "invalid_input" in body
    assert 'value="go"' in body and 'value="[1]"' in body and 'value="m-1"' in body
    assert re.search(r'id="id_payload"[^>]*>\s*<ul class="errorlist"><li>must be a JSON object', body), body
    ended = engine_for(define_workflow(name="done", run=lambda ctx, input: {})).run("done")
    late = root.post(f"/admin/runs/run/{ended.id}/message/", {"topic": "go", "payload": "{}"})
    assert late.status_code == 400 and "run_ended" in late.content.decode()
