"""In-doubt calls: a vendor that ignores idempotency keys is never sent a call again blindly.

The crash is the engine's own fault point right after the vendor answered (before anything is
recorded), raised as a BaseException so the advance dies as a killed worker does; the lease is
then taken over as the sweep takes over a dead worker's run.
"""
from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from connectors import define_connector, op
from connectors.errors import SanomaError
from runs import recovery, selectors
from runs.authoring import define_workflow
from runs.engine import clock, doubts, faults, transitions
from runs.engine.faults import FaultPoint
from runs.models import Run, RunStatus
from runs.testing import make_user
from runs.tests.bank_vendor import Found, Paid, Pay, bank_setup

bank = bank_setup("bank")
bank2 = bank_setup("bank2", reconcile=True)

pay = define_workflow(name="pay", uses=[bank.op("bank.payment.create")],
                      run=lambda ctx, input: ctx.bank.payment.create({"order": "o1", "cents": 500}).payment_id)
pay2 = define_workflow(name="pay2", uses=[bank2.op("bank2.payment.create")],
                       run=lambda ctx, input: ctx.bank2.payment.create({"order": "o1", "cents": 500}).payment_id)


class Killed(BaseException):
    """The worker died."""


def crash_after_the_vendor_answered(engine, workflow: str) -> Run:
    faults.arm(FaultPoint.AFTER_DRIVER_CALL, Killed())
    run = engine.start(workflow)
    with pytest.raises(Killed):
        engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING  # its worker is gone, its lease runs out
    assert transitions.take_over(run_id=run.id, owner=run.lease_owner, now=clock.now() + timedelta(minutes=5))
    engine.drain()
    run.refresh_from_db()
    return run


@pytest.fixture
def ops(db):
    return make_user("ops", perms=["runs.view_any_run", "runs.operate_runs"])


@pytest.fixture
def engine(engine_for):
    yield engine_for(pay, pay2, connectors=[bank, bank2])
    faults.clear()


def test_a_call_that_may_have_happened_waits_in_doubt_and_is_not_sent_again(engine, ops):
    run = crash_after_the_vendor_answered(engine, "pay")
    fake = engine.config.fakes["bank"]
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "in_doubt")
    assert len(fake.state["payments"]) == 1 and len(fake.calls) == 1  # the vendor saw one call
    assert selectors.waiting_on(run) == {"kind": "in_doubt", "until": None, "op": "bank.payment.create", "seq": 1,
                                         "attempt": 1}
    recovery.resolve_in_doubt(run_id=run.id, happened=True, output={"payment_id": "pay_1"}, by="ops",
                              note="seen in the bank's dashboard")
    engine.drain()
    run.refresh_from_db()
    assert (run.status, run.result) == (RunStatus.FINISHED, "pay_1")
    assert len(fake.calls) == 1  # never sent again
    [resolved] = engine.records(run, "op.resolved")
    assert (resolved["happened"], resolved["by"], resolved["actor"], resolved["note"]) == (
        True, "ops", "ops", "seen in the bank's dashboard")
    [called] = engine.records(run, "op.called")
    assert called["resolved_by"] == "ops" and called["output"] == {"payment_id": "pay_1"}


def test_an_operator_saying_it_did_not_happen_sends_it_again(engine, ops):
    run = crash_after_the_vendor_answered(engine, "pay")
    recovery.resolve_in_doubt(run_id=run.id, happened=False, by="ops")
    engine.drain()
    run.refresh_from_db()
    fake = engine.config.fakes["bank"]
    assert (run.status, run.result) == (RunStatus.FINISHED, "pay_2") and len(fake.calls) == 2
    assert [r["attempt"] for r in engine.records(run, "op.intent")] == [1, 2]


def test_a_reconcile_read_settles_the_doubt_by_asking_the_vendor(engine, ops):
    run = crash_after_the_vendor_answered(engine, "pay2")
    fake = engine.config.fakes["bank2"]
    # The attempt may still land until its deadline (the call's timeout from its intent): the run
    # waits in doubt until then, and the vendor is not asked yet.
    [intent] = engine.records(run, "op.intent")
    assert -100 <= intent["deadline"] - intent["at"] - 60_000 <= 0  # the site's default timeout, 60 s
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "in_doubt")
    assert run.wake_at is not None and clock.to_ms(run.wake_at) == intent["deadline"] + doubts.CLOCK_MARGIN_MS
    assert [c["op"] for c in fake.calls] == ["bank2.payment.create"]
    clock.advance(run.wake_at - clock.now())
    engine.drain()
    run.refresh_from_db()
    assert (run.status, run.result) == (RunStatus.FINISHED, "pay_1")
    assert [c["op"] for c in fake.calls] == ["bank2.payment.create", "bank2.payment.find"]
    [resolved] = engine.records(run, "op.resolved")
    assert (resolved["happened"], resolved["by"]) == (True, "reconcile")


@pytest.mark.parametrize(("kwargs", "says"), [
    ({"happened": "yes"}, "true or false"),
    ({"happened": True, "output": {"payment": 1}}, "payment_id"),
    ({"happened": False, "output": {"payment_id": "x"}}, "has no output"),
])
def test_a_bad_answer_is_refused_and_changes_nothing(engine, ops, kwargs, says):
    run = crash_after_the_vendor_answered(engine, "pay")
    with pytest.raises(SanomaError) as refused:
        recovery.resolve_in_doubt(run_id=run.id, by="ops", **kwargs)
    assert refused.value.code == "invalid_input" and says in refused.value.message
    assert not engine.records(run, "op.resolved")
    with pytest.raises(SanomaError) as not_operator:
        recovery.resolve_in_doubt(run_id=run.id, happened=False, by="alice")
    assert not_operator.value.code == "permission_denied"


def test_a_run_not_in_doubt_has_nothing_to_settle(engine, ops):
    run = engine.run("pay")
    assert run.status == RunStatus.FINISHED and not engine.records(run, "op.resolved") == [None]
    with pytest.raises(SanomaError, match="has no call in doubt"):
        recovery.resolve_in_doubt(run_id=run.id, happened=True, output={"payment_id": "x"}, by="ops")


def test_declaring_in_doubt_handling_wrongly_names_what_is_wrong():
    with pytest.raises(ValueError, match="idempotency_key must be one of honoured, ignored"):
        op(effect="money", input=Pay, output=Paid, idempotency_key="sometimes")
    with pytest.raises(ValueError, match="reconcile is for an operation whose vendor ignores"):
        op(effect="money", input=Pay, output=Paid, reconcile="find")
    with pytest.raises(ValueError, match="must be an idempotent read"):
        define_connector("b3", {"payment": {
            "create": op(effect="money", input=Pay, output=Paid, idempotency_key="ignored", reconcile="undo"),
            "undo": op(effect="money", input=Pay, output=Found)}})


def test_the_command_lists_runs_in_doubt_and_settles_one(engine, ops):
    run = crash_after_the_vendor_answered(engine, "pay")
    out = StringIO()
    call_command("resolve", stdout=out)
    assert out.getvalue().strip() == f"{run.id}  pay  step 1: bank.payment.create (attempt 1)"
    with pytest.raises(CommandError, match="--happened"):
        call_command("resolve", run.id, "--as", "ops")
    out = StringIO()
    call_command("resolve", run.id, "--happened", "--output", '{"payment_id": "pay_1"}', "--as", "ops", stdout=out)
    assert out.getvalue().strip() == f"{run.id} queued: the call is settled"


def test_the_admin_page_settles_a_call_in_doubt(engine, ops):
    ops.is_staff = True
    ops.save()
    run = crash_after_the_vendor_answered(engine, "pay")
    client = Client()
    client.force_login(ops)
    assert "Settle the call in doubt" in client.get(f"/admin/runs/run/{run.id}/change/").content.decode()
    page = client.get(f"/admin/runs/run/{run.id}/in-doubt/").content.decode()
    assert "bank.payment.create" in page and "step 1" in page
    client.post(f"/admin/runs/run/{run.id}/in-doubt/", {"happened": "no", "note": "not in the bank's list"})
    engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED and engine.records(run, "op.resolved")[0]["note"] == (
        "not in the bank's list")


def test_the_api_settles_a_call_in_doubt(engine, ops):
    run = crash_after_the_vendor_answered(engine, "pay")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=ops)[0].key}")
    bad = api.post(f"/api/runs/{run.id}/in-doubt", {"happened": True, "output": {"x": 1}}, format="json")
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_input"
    shown = api.get(f"/api/runs/{run.id}").json()["run"]["waiting"]
    assert (shown["kind"], shown["op"]) == ("in_doubt", "bank.payment.create")
    done = api.post(f"/api/runs/{run.id}/in-doubt", {"happened": True, "output": {"payment_id": "pay_1"}},
                    format="json")
    assert done.status_code == 200, done.content
    engine.drain()
    run.refresh_from_db()
    assert run.result == "pay_1"


def desk(ops) -> Client:
    ops.is_staff = True
    ops.save()
    client = Client()
    client.force_login(ops)
    return client


def test_a_refused_settle_form_keeps_what_was_typed_and_names_each_field(engine, ops):
    run = crash_after_the_vendor_answered(engine, "pay")
    client = desk(ops)
    page = client.post(f"/admin/runs/run/{run.id}/in-doubt/", {"output": '{"payment_id": "p1",}',
                                                                  "note": "seen in the dashboard"})
    assert page.status_code == 400
    text = page.content.decode()
    assert 'value="seen in the dashboard"' in text and "{&quot;payment_id&quot;: &quot;p1&quot;,}</textarea>" in text
    assert 'id="error-happened"' in text and "Say whether the call happened" in text
    assert 'id="error-output"' in text and "The output is not valid JSON: " in text and "line 1 column" in text
    assert text.count('name="happened"') == text.count("required") == 2  # both radios, the choice is required
    # JSON that is not the operation's output names the output's own field, never "the input"
    page = client.post(f"/admin/runs/run/{run.id}/in-doubt/", {"happened": "yes", "output": '{"payment": 1}',
                                                                  "note": "seen"})
    text = page.content.decode()
    assert page.status_code == 400 and 'value="yes" required checked' in text
    assert "The output does not match bank.payment.create&#x27;s output schema: output.payment_id: Field required" \
        in text and "the input" not in text.lower().replace("the input to", "")
    page = client.post(f"/admin/runs/run/{run.id}/in-doubt/", {"happened": "yes", "output": ""})
    assert page.status_code == 400 and "Give the vendor&#x27;s output of bank.payment.create" in page.content.decode()
    assert not engine.records(run, "op.resolved")


def test_the_settle_page_shows_what_was_sent_and_whether_the_vendor_was_asked(engine, ops):
    run = crash_after_the_vendor_answered(engine, "pay")
    client = desk(ops)
    text = client.get(f"/admin/runs/run/{run.id}/in-doubt/").content.decode()
    assert '<pre class="sanoma-json">' in text and "&quot;order&quot;: &quot;o1&quot;" in text  # pretty, not raw
    assert f"<code>{run.id}:1</code>" in text  # the idempotency key it was sent with
    assert "attempt</th><td>1</td>" in text and "sent</th><td>" in text
    assert "Not asked: bank.payment.create declares no reconcile read" in text
    in_wait = crash_after_the_vendor_answered(engine, "pay2")
    text = client.get(f"/admin/runs/run/{in_wait.id}/in-doubt/").content.decode()
    assert "Not asked yet: its reconcile read bank2.payment.find is asked once the call can no longer land" in text


def test_the_run_page_says_in_words_what_a_run_in_doubt_waits_for(engine, ops):
    run = crash_after_the_vendor_answered(engine, "pay")
    text = desk(ops).get(f"/admin/runs/run/{run.id}/change/").content.decode()
    assert "a word on a call in doubt: bank.payment.create (step 1)" in text
    field = re.search(r"<label>Waiting for:</label>\s*<div class=\"readonly\">([^<]*)</div>", text)
    assert field is not None and field.group(1) == "a word on a call in doubt"
