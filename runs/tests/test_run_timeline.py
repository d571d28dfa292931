"""A run over time: the run page's waterfall (idle stretches compressed, repeated calls folded),
and two runs compared step by step on the desk and over the API."""
from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from pydantic import BaseModel
from rest_framework.test import APIClient

from runs import ledger
from runs.admin.graph import Fold, graph_of
from runs.admin.waterfall import GAP_MS, MIN_WIDTH, Axis, open_message_wait, waterfall
from runs.approvals.services import decide
from runs.authoring import define_workflow
from runs.comparison import compare_runs
from runs.engine import clock
from runs.seed import seed_person
from runs.services import send_message
from runs.tests.fixtures import GET, SEND
from runs.tests.test_api import client_for as api_client
from runs.timing import run_time

pytestmark = pytest.mark.django_db


class Check(BaseModel):
    order_id: str = "1"
    reads: int = 3


def _check_then_ask(ctx, input: Check):
    for _ in range(input.reads):
        ctx.acme.order.get({"order_id": input.order_id})
    ctx.approval("Refund the order", approver="bob")
    ctx.acme.mail.send({"to": "customer", "text": "refunded"})
    return {"reads": input.reads}


# Reads an order `reads` times, asks bob, then mails the customer: what the desk's time pages show.
check_then_ask = define_workflow(name="check-then-ask", title="Check, ask, tell", input=Check,
                                 uses=[GET, SEND, "approval"], run=_check_then_ask)


def waited_three_days(engine, *, reads: int = 21, run_id: str = "wait-3d"):
    """A run that read its order `reads` times, then waited 3 d 2 h for bob, and finished."""
    run = engine.run("check-then-ask", {"reads": reads}, run_id=run_id)
    clock.advance(timedelta(days=3, hours=2))
    decide(run_id=run.id, decision="approve", by="bob", timeout=0)
    engine.drain()
    run.refresh_from_db()
    assert run.status == "finished", run.error
    return run


def desk(username: str, *, superuser: bool = False, perms: tuple[str, ...] = ()) -> Client:
    client = Client()
    client.force_login(seed_person(username=username, staff=True, superuser=superuser, perms=perms))
    return client


# -- the waterfall -----------------------------------------------------------------------------------


def test_a_three_day_wait_is_one_compressed_break_and_the_calls_still_show(engine_for):
    engine = engine_for(check_then_ask)
    run = waited_three_days(engine)
    drawn = waterfall(run_time(ledger.records_of(run.id)), now_ms=clock.now_ms())
    assert drawn is not None
    [gap] = drawn.gaps
    assert gap.label == "… 3 d 2 h …"
    assert gap.width <= 40
    reads, approval, mail = drawn.bars
    assert (reads.label, reads.count, reads.detail) == ("acme.order.get", 21, "21 ok")
    assert [call.label for call in reads.calls] == ["acme.order.get"] * 21
    assert (approval.kind, approval.outcome, approval.took) == ("approval", "approved", "3 d 2 h")
    # The wait's bar crosses the break; the calls before and after it keep most of the axis.
    assert approval.left <= gap.left and approval.left + approval.width >= gap.left + gap.width
    # (a bar is at least MIN_WIDTH wide, so a call of 0 ms ending at the break may reach into it)
    assert reads.left + reads.width <= gap.left + MIN_WIDTH + 0.01 and mail.left >= gap.left + gap.width - 0.01
    assert drawn.took == "3 d 2 h"


def test_the_run_page_draws_the_waterfall_and_a_running_wait_reaches_now(engine_for):
    engine = engine_for(check_then_ask)
    run = engine.run("check-then-ask", {"reads": 2}, run_id="waiting")
    clock.advance(timedelta(hours=5))
    page = desk("root", superuser=True).get(f"/admin/runs/run/{run.id}/change/").content.decode()
    assert 'id="waterfall"' in page and "… 5 h …" in page
    assert re.search(r'sanoma-wf-row approval waiting open', page)
    assert "5 h so far" in page
    assert 'data-count="2"' in page  # the two reads, folded


def _read_then_wait(ctx, input: Check):
    ctx.acme.order.get({"order_id": input.order_id})
    return ctx.wait_message("shipped")


# Reads an order, then waits for the warehouse's message.
read_then_wait = define_workflow(name="read-then-wait", input=Check, uses=[GET, "wait_message"], run=_read_then_wait)


def test_a_message_still_waited_for_is_an_open_bar_as_an_approval_not_yet_decided_is(engine_for):
    engine = engine_for(read_then_wait)
    run = engine.run("read-then-wait", {"reads": 1}, run_id="awaits")
    assert run.status == "waiting" and run.waiting_for == "message"
    clock.advance(timedelta(minutes=6, seconds=18))
    wait = open_message_wait(run)
    assert wait is not None and wait.topic == "shipped"
    drawn = waterfall(run_time(ledger.records_of(run.id), waiting=wait), now_ms=clock.now_ms())
    assert drawn is not None
    read, waiting = drawn.bars
    assert read.kind == "call"
    assert (waiting.kind, waiting.outcome, waiting.open) == ("message", "waiting", True)
    assert waiting.label == "waits for a message on “shipped”" and waiting.took == "6 min 18 s so far"
    assert round(waiting.left + waiting.width) == 100  # it reaches to the moment of the read

    # Once the message is read, the same wait is one closed bar, drawn from the ledger.
    send_message(run_id=run.id, topic="shipped", payload={"ok": True},
                 by=seed_person(username="warehouse", staff=True, superuser=True))
    engine.drain()
    run.refresh_from_db()
    assert run.status == "finished" and open_message_wait(run) is None
    ended = waterfall(run_time(ledger.records_of(run.id), waiting=open_message_wait(run)), now_ms=clock.now_ms())
    assert ended is not None
    [message] = [bar for bar in ended.bars if bar.kind == "message"]
    assert (message.outcome, message.open) == ("received", False)


def test_an_open_message_wait_is_drawn_on_the_run_page(engine_for):
    engine = engine_for(read_then_wait)
    run = engine.run("read-then-wait", {"reads": 1}, run_id="awaits-page")
    clock.advance(timedelta(minutes=3))
    page = desk("root", superuser=True).get(f"/admin/runs/run/{run.id}/change/").content.decode()
    assert re.search(r'sanoma-wf-row message waiting open', page)
    assert "3 min so far" in page


def test_an_axis_without_long_stretches_is_linear():
    axis = Axis(0, 1000, [0, 250, 500, 1000])
    assert axis.gaps == []
    assert [round(axis.at(ms), 2) for ms in (0, 250, 500, 1000)] == [0.0, 25.0, 50.0, 100.0]
    compressed = Axis(0, 2 * GAP_MS + 100, [0, 100, 2 * GAP_MS + 100])
    [gap] = compressed.gaps
    assert compressed.at(100) == 100 - gap.width and compressed.at(2 * GAP_MS + 100) == 100


def test_repeated_calls_are_one_node_in_the_picture(engine_for):
    engine = engine_for(check_then_ask)
    run = engine.run("check-then-ask", {"reads": 4})
    rows = graph_of(ledger.records_of(run.id), ended=False)
    [fold] = [row for row in rows if isinstance(row, Fold)]
    assert (fold.title, fold.count, fold.detail, fold.badge) == ("acme.order.get", 4, "4 ok", "read")
    single = engine.run("check-then-ask", {"reads": 1})
    assert not any(isinstance(row, Fold) for row in graph_of(ledger.records_of(single.id), ended=False))


def test_the_run_page_costs_the_same_queries_with_its_waterfall_for_5_and_for_50_calls(engine_for):
    engine = engine_for(check_then_ask)
    root = desk("root", superuser=True)
    counts = {}
    for reads in (5, 50):
        run = waited_three_days(engine, reads=reads, run_id=f"reads-{reads}")
        url = f"/admin/runs/run/{run.id}/change/"
        root.get(url)
        with CaptureQueriesContext(connection) as captured:
            page = root.get(url)
        assert f'data-count="{reads}"' in page.content.decode()
        counts[reads] = len(captured.captured_queries)
    assert counts[5] == counts[50], counts


# -- comparing runs ----------------------------------------------------------------------------------


def test_two_runs_are_aligned_step_by_step_and_what_differs_is_named(engine_for):
    engine = engine_for(check_then_ask)
    good = waited_three_days(engine, reads=2, run_id="good")
    bad = engine.run("check-then-ask", {"order_id": "9", "reads": 2}, run_id="bad")
    assert bad.status == "failed"
    comparison = compare_runs(a_id=good.id, b_id=bad.id, viewer=None)
    facts = {fact.name: fact.differs for fact in comparison.facts}
    assert facts["status"] and facts["input"] and facts["error"] and not facts["version"] and not facts["workflow"]
    first, second, approval, mail = comparison.steps
    assert first.a is not None and first.b is not None and approval.a is not None
    assert (first.a.name, first.b.name) == ("acme.order.get", "acme.order.get")
    assert set(first.differs) == {"outcome", "input", "output", "error"}
    assert (second.b, second.differs) == (None, ("only in a",))
    assert approval.differs == ("only in a",) and approval.a.approvers == ["asked of bob", "approved by bob"]
    assert mail.differs == ("only in a",)
    # Two runs made alike differ only where the vendor numbered what it made (the mail's id).
    same = compare_runs(a_id=good.id, b_id=waited_three_days(engine, reads=2, run_id="good-2").id, viewer=None)
    assert [pair.differs for pair in same.steps] == [(), (), (), ("output",)]
    mailed = same.steps[3]
    assert mailed.a is not None and mailed.b is not None and mailed.a.output != mailed.b.output


def test_the_compare_page_costs_the_same_queries_for_5_and_for_50_steps(engine_for):
    engine = engine_for(check_then_ask)
    root = desk("root", superuser=True)
    counts = {}
    for reads in (5, 50):
        a = engine.run("check-then-ask", {"reads": reads}, run_id=f"a-{reads}")
        b = engine.run("check-then-ask", {"reads": reads, "order_id": "2"}, run_id=f"b-{reads}")
        url = f"/admin/runs/run/{a.id}/compare/?with={b.id}"
        root.get(url)
        with CaptureQueriesContext(connection) as captured:
            page = root.get(url)
        assert page.status_code == 200 and page.content.decode().count('class="step differs"') == reads
        counts[reads] = len(captured.captured_queries)
    assert counts[5] == counts[50], counts


@pytest.mark.parametrize(("other", "status", "says"), [
    ("nope", 404, "No run nope"),
    ("bad id!", 400, "is not valid"),
    ("same", 400, "Choose another run to compare same with"),
])
def test_the_compare_page_says_what_is_wrong_with_the_other_run(engine_for, other, status, says):
    engine = engine_for(check_then_ask)
    engine.run("check-then-ask", run_id="same")
    page = desk("root", superuser=True).get("/admin/runs/run/same/compare/", {"with": other})
    assert page.status_code == status
    problem = re.search(r'id="compare-problem">([^<]*)<', page.content.decode())
    assert problem is not None and says in problem.group(1)


def test_the_runs_list_compares_exactly_two_ticked_runs(engine_for):
    engine = engine_for(check_then_ask)
    first, second, third = (engine.run("check-then-ask", run_id=f"r{n}") for n in (1, 2, 3))
    root = desk("root", superuser=True)
    two = root.post("/admin/runs/run/", {"action": "compare_two", "_selected_action": [second.id, first.id]})
    assert two.status_code == 302 and two["Location"] == "/admin/runs/run/r1/compare/?with=r2"
    three = root.post("/admin/runs/run/", {"action": "compare_two",
                                           "_selected_action": [first.id, second.id, third.id]}, follow=True)
    assert "Tick two runs to compare (you ticked 3)" in three.content.decode()


# -- the API -----------------------------------------------------------------------------------------


def test_the_api_compares_two_runs_the_caller_may_see(engine_for, alice):
    engine = engine_for(check_then_ask)
    good = waited_three_days(engine, reads=2, run_id="good")
    bad = engine.run("check-then-ask", {"order_id": "9"}, run_id="bad")
    answer = api_client(alice).get(f"/api/runs/{good.id}/compare/{bad.id}")
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert (body["a"], body["b"]) == ("good", "bad")
    assert {f["name"] for f in body["facts"] if f["differs"]} == {"status", "input", "result", "error", "steps"}
    first = body["steps"][0]
    assert first["a"]["outcome"] == "ok" and first["b"]["outcome"] == "failed"
    assert first["b"]["error"]["message"] == "no order 9"
    assert body["steps"][2]["a"]["approvers"] == ["asked of bob", "approved by bob"]
    assert body["steps"][2]["b"] is None and body["steps"][2]["differs"] == ["only in a"]
    assert body["took_ms"]["a"] >= timedelta(days=3, hours=2).total_seconds() * 1000


def test_the_api_answers_a_run_the_caller_may_not_see_as_not_found_and_a_bad_id_as_400(engine_for, alice):
    engine = engine_for(check_then_ask)
    mine = engine.run("check-then-ask", run_id="mine")
    seed_person(username="carol", perms=("runs.start_workflow",))
    theirs = engine.run("check-then-ask", run_id="theirs", by="carol")
    client = api_client(alice)
    for url in (f"/api/runs/{mine.id}/compare/{theirs.id}", f"/api/runs/{theirs.id}/compare/{mine.id}",
                f"/api/runs/{mine.id}/compare/missing"):
        answer = client.get(url)
        assert (answer.status_code, answer.json()["code"]) == (404, "run_not_found"), url
    bad = client.get(f"/api/runs/{mine.id}/compare/b%21d")
    assert (bad.status_code, bad.json()["code"]) == (400, "invalid_input")
    assert bad.json()["issues"][0]["path"] == ["other_id"] and "is not valid" in bad.json()["error"]
    same = client.get(f"/api/runs/{mine.id}/compare/{mine.id}")
    assert (same.status_code, same.json()["code"]) == (400, "invalid_input")
    assert APIClient().get(f"/api/runs/{mine.id}/compare/{theirs.id}").status_code == 401


def test_the_schema_documents_the_comparison(alice):
    schema = api_client(alice).get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/runs/{run_id}/compare/{other_id}"]["get"]
    assert operation["operationId"] == "runs_compare"
    assert set(operation["responses"]) >= {"200", "400", "401", "404"}
    assert "ComparedStep" in schema["components"]["schemas"]


def test_the_compare_page_shows_a_runs_words_as_words_not_json(engine_for):
    engine = engine_for(check_then_ask)
    a = engine.run("check-then-ask", {"reads": 1}, run_id="words-a")
    b = engine.run("check-then-ask", {"reads": 1, "order_id": "2"}, run_id="words-b")
    page = desk("root", superuser=True).get(f"/admin/runs/run/{a.id}/compare/?with={b.id}").content.decode()
    assert '<pre class="sanoma-value">check-then-ask</pre>' in page
    assert '<pre class="sanoma-value">&quot;check-then-ask&quot;</pre>' not in page
