"""The admin as the operator's desk: the home page lists the desk first and Django's own tables
under "Administration" for superusers only; every page counts the approvals waiting for me; the
runs list, a running run's page and the inbox refresh themselves; a run that is missing or hidden
gets one answer saying both; read-only records have no History button."""
from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from pydantic import BaseModel

from connectors import define_connector, op, with_setup
from connectors.fakes import define_fake
from runs.approvals.services import decide
from runs.authoring import define_workflow
from runs.models import Approval, LedgerRecord, OperatorPreference, RunMessage
from runs.policies.python_policies import allow, approve, define_policy
from runs.seed import seed_person
from runs.tests.fixtures import GET

pytestmark = pytest.mark.django_db


def ask_twice(ctx, input):
    ctx.approval("First look", approver="bob")
    ctx.approval("Second look", approver="bob")
    return {}


asks = define_workflow(name="asks", uses=["approval"], run=ask_twice)


def client_for(username: str, *, superuser: bool = False) -> Client:
    user = seed_person(username=username, staff=True, superuser=superuser,
                       perms=() if superuser else ("runs.start_workflow",))
    client = Client()
    client.force_login(user)
    return client


def headings(page: str) -> list[str]:
    return re.findall(r'<caption>\s*<a [^>]*class="section"[^>]*>([^<]+)</a>', page)


def test_the_home_page_lists_the_desk_first_and_administration_for_superusers_only():
    admin_home = client_for("root", superuser=True).get("/admin/").content.decode()
    assert headings(admin_home)[:4] == ["Runs", "Catalog", "Changes", "Wakeups"]
    assert headings(admin_home)[-1] == "Administration"
    assert "Authentication and Authorization: Users" in admin_home
    staff_home = client_for("carol").get("/admin/").content.decode()
    assert "Administration" not in headings(staff_home) and "Users" not in staff_home


def test_every_page_counts_the_approvals_waiting_for_me(engine_for):
    engine = engine_for(asks)
    engine.run("asks")
    bob = client_for("bob")
    for page in ("/admin/", "/admin/runs/run/", "/admin/runs/ledgerrecord/"):
        body = bob.get(page).content.decode()
        badge = re.search(r'id="inbox-badge"[^>]*>Inbox <strong class="sanoma-badge">(\d+)</strong>', body)
        assert badge is not None and badge.group(1) == "1", page  # the second is not asked yet
    quiet = client_for("carol").get("/admin/").content.decode()
    assert 'id="inbox-badge"' in quiet and '<strong class="sanoma-badge">' not in quiet


def test_the_runs_list_a_running_runs_page_and_the_inbox_refresh_themselves(engine_for):
    engine = engine_for(asks)
    waiting = engine.run("asks")
    root = client_for("root", superuser=True)
    for page in ("/admin/runs/run/", f"/admin/runs/run/{waiting.id}/change/", "/admin/runs/approval/"):
        assert "X-Sanoma-Live" in root.get(page).content.decode(), page


def test_an_ended_runs_page_does_not_refresh(engine_for):
    engine = engine_for(define_workflow(name="done", run=lambda ctx, input: {}))
    run = engine.run("done")
    page = client_for("root", superuser=True).get(f"/admin/runs/run/{run.id}/change/").content.decode()
    assert "X-Sanoma-Live" not in page


def test_a_missing_or_hidden_run_gets_one_answer_and_read_only_records_have_no_history_button(engine_for):
    engine = engine_for(asks)
    run = engine.run("asks")
    carol = client_for("carol")
    for run_id in (run.id, "no-such-run"):
        answer = carol.get(f"/admin/runs/run/{run_id}/change/", follow=True).content.decode()
        assert f"No run {run_id}, or you may not see it" in answer
        assert "Perhaps it was deleted" not in answer
    root = client_for("root", superuser=True)
    assert "historylink" not in root.get(f"/admin/runs/run/{run.id}/change/").content.decode()
    record = LedgerRecord.objects.filter(run_id=run.id).first()
    assert record is not None
    assert "historylink" not in root.get(f"/admin/runs/ledgerrecord/{record.pk}/change/").content.decode()


def _pair(ctx, input):
    ctx.all([lambda: ctx.acme.order.get({"order_id": "1"}), lambda: ctx.wait_message("go")])
    return {}


pair = define_workflow(name="pair", uses=[GET, "all", "wait_message"], run=_pair)


def test_the_run_page_says_what_the_run_is_doing_and_draws_it_from_the_ledger(engine_for):
    engine = engine_for(asks, pair, policy=define_policy(
        lambda call: approve("bob") if call.effect == "read" else allow(), version="p"))
    waiting = engine.run("asks")
    root = client_for("root", superuser=True)
    page = root.get(f"/admin/runs/run/{waiting.id}/change/").content.decode()
    now = re.search(r'<p id="run-now"[^>]*>(.*?)</p>', page, re.S)
    assert now is not None and "Waiting for bob to approve “First look” since" in now.group(1)
    assert 'data-kind="approval"' in page and "asked of bob" in page

    grouped = engine.run("pair")
    page = root.get(f"/admin/runs/run/{grouped.id}/change/").content.decode()
    lanes = re.search(r'<li class="sanoma-lanes".*?</li>\s*</ol>\s*</div>\s*</li>', page, re.S)
    assert lanes is not None, page
    # The first member's call is held for bob (a policy hold drawn on its call); the second member
    # has not started: the group is in progress.
    assert 'class="sanoma-hold waiting"' in lanes.group(0) and "held by the policy" in lanes.group(0)
    assert "not started" in lanes.group(0)
    decide(run_id=grouped.id, decision="approve", by="bob", timeout=0)
    engine.drain()
    page = root.get(f"/admin/runs/run/{grouped.id}/change/").content.decode()
    assert "acme.order.get" in page and 'class="sanoma-effect read"' in page and "approved by bob" in page
    assert "Waiting for a message on “go”" in page
    assert "ctx.all member 1 of 2" in page


def test_each_person_sees_moments_in_their_own_time_zone(engine_for):
    engine = engine_for(define_workflow(name="done", run=lambda ctx, input: {}))
    run = engine.run("done")
    root = client_for("root", superuser=True)
    page = root.get(f"/admin/runs/run/{run.id}/change/").content.decode()
    assert " UTC (" in page and 'id="time-zone"' in page
    refused = root.post("/admin/preferences/", {"time_zone": "Mars/Olympus"}, follow=True).content.decode()
    assert "is not a time zone" in refused and not OperatorPreference.objects.exists()
    root.post("/admin/preferences/", {"time_zone": "Europe/Helsinki"})
    page = root.get(f"/admin/runs/run/{run.id}/change/").content.decode()
    assert re.search(r"<time [^>]*title=\"[^\"]* UTC\">[^<]* EE[ST] \(", page), "Helsinki time, UTC on hover"
    other = client_for("carol")
    assert "Europe/Helsinki" not in other.get("/admin/").content.decode()  # one person's choice
    root.post("/admin/preferences/", {"time_zone": ""})
    assert OperatorPreference.objects.get().time_zone == ""


class Pay(BaseModel):
    order_id: str
    amount_cents: int


class Paid(BaseModel):
    ok: bool = True


pay_vendor = define_connector("pay", {"order": {"refund": op(
    effect="money", input=Pay, output=Paid, summary="Refund {amount_cents:money} on order {order_id}")}})


def pay_fake(file=None):
    return define_fake(pay_vendor, initial=dict, ops={"order": {"refund": lambda state, i, c: {"ok": True}}},
                       file=file)


payments = with_setup(pay_vendor, fake=pay_fake)


def _refund_big(ctx, input):
    ctx.pay.order.refund({"order_id": "1001", "amount_cents": 123456})
    return {}


refund_big = define_workflow(name="refund-big", uses=["pay.order.refund"], run=_refund_big)


def test_the_inbox_and_the_approval_page_say_what_a_held_call_does_in_its_operations_words(engine_for):
    engine = engine_for(refund_big, connectors=[payments],
                        policy=define_policy(lambda call: approve("bob"), version="s"))
    run = engine.run("refund-big")
    bob = client_for("bob")
    inbox = bob.get("/admin/runs/approval/").content.decode()
    assert '<strong class="sanoma-summary">Refund 1,234.56 on order 1001</strong>' in inbox
    approval = Approval.objects.get(run=run)
    page = bob.get(f"/admin/runs/approval/{approval.pk}/change/").content.decode()
    assert 'id="approval-summary">Refund 1,234.56 on order 1001<' in page
    assert "started by alice" in page and "refund-big" in page


@pytest.mark.parametrize(("summary", "says"), [
    ("Refund {amount:money}", "names {amount}, which is not an input field"),
    ("Refund {amount_cents:euros}", "is not a format"),
    ("  ", "must be a sentence"),
])
def test_a_summary_naming_what_the_input_lacks_is_refused(summary, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        op(effect="money", input=Pay, output=Paid, summary=summary)


def test_the_run_page_sends_a_message_and_refuses_a_bad_one(engine_for):
    engine = engine_for(define_workflow(name="word", uses=["wait_message"],
                                        run=lambda ctx, input: ctx.wait_message("go")))
    run = engine.run("word")
    root = client_for("root", superuser=True)
    page = root.get(f"/admin/runs/run/{run.id}/change/").content.decode()
    assert 'id="send-message"' in page
    bad = root.post(f"/admin/runs/run/{run.id}/message/", {"topic": "go", "payload": "[1]"}, follow=True)
    assert "Not sent" in bad.content.decode() and not RunMessage.objects.exists()
    root.post(f"/admin/runs/run/{run.id}/message/", {"topic": "go", "payload": '{"ok": true}'})
    engine.drain()
    run.refresh_from_db()
    assert run.result == {"ok": True}
    assert 'id="send-message"' not in root.get(f"/admin/runs/run/{run.id}/change/").content.decode()


def _queries(client: Client, url: str) -> int:
    client.get(url)  # once first: per-process caches (content types, the config) fill on the first view
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured.captured_queries)


class Count(BaseModel):
    n: int = 1


def _calls_then_ask(ctx, input: Count):
    for _ in range(input.n):
        ctx.acme.order.get({"order_id": "1"})
    ctx.approval("Look", approver="bob")
    return {}


calls_then_ask = define_workflow(name="calls-then-ask", input=Count, uses=[GET, "approval"], run=_calls_then_ask)


def test_the_runs_list_the_inbox_and_a_run_page_cost_the_same_queries_for_5_and_for_50_rows(engine_for):
    engine = engine_for(calls_then_ask)
    root, bob = client_for("root", superuser=True), client_for("bob")
    counts = {}
    for rows, more in ((5, 5), (50, 45)):
        # `rows` runs in the list and asks in the inbox; the run whose page is read has `rows` calls (the
        # others one each: a row of the list or the inbox is a run or an ask, whatever its steps).
        runs = [engine.run("calls-then-ask", {"n": rows if i == more - 1 else 1}) for i in range(more)]
        counts[rows] = (_queries(root, "/admin/runs/run/"), _queries(bob, "/admin/runs/approval/"),
                        _queries(root, f"/admin/runs/run/{runs[-1].id}/change/"))
    assert counts[5] == counts[50], counts
