"""Direct calls over the API (DRF's test client, a token) and the command: the same answers, the
same refusals, nothing written by a refused one."""
from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from runs.api import views
from runs.approvals import services as approvals
from runs.direct_calls import CallAnswer
from runs.direct_calls.tests.test_direct_calls import hold_money, no_mail_from_direct_calls, written
from runs.models import Run
from runs.policies import define_policy
from runs.testing import make_user


def either(call: Any) -> Any:
    denied = no_mail_from_direct_calls(call)
    return denied if denied.kind == "deny" else hold_money(call)


@pytest.fixture
def engine(engine_for, monkeypatch):
    monkeypatch.setattr(views, "DECIDE_WAIT_SECONDS", 0.05)  # no worker here: a decision is applied by the next call
    make_user("finance-lead", perms=["runs.start_workflow"])
    return engine_for(policy=define_policy(either, version="v1"))


def client_of(username: str) -> APIClient:
    from django.contrib.auth import get_user_model

    client = APIClient()
    token, _ = Token.objects.get_or_create(user=get_user_model().objects.get(username=username))
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def post(client: APIClient, body: Any) -> Any:
    return client.post("/api/calls", data=json.dumps(body), content_type="application/json")


# ---- the API ------------------------------------------------------------------------------------


def test_the_api_makes_an_allowed_call(engine):
    response = post(client_of("alice"), {"op": "acme.order.get", "input": {"order_id": "1"}, "key": "get-1"})
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["outcome"], body["op"], body["run_id"], body["repeated"]) == ("made", "acme.order.get",
                                                                             "call-get-1", False)
    assert body["output"] == {"order_id": "1", "total": 100, "handle": "h-1"}
    again = post(client_of("alice"), {"op": "acme.order.get", "input": {"order_id": "1"}, "key": "get-1"})
    assert (again.status_code, again.json()["repeated"]) == (200, True)
    assert len(engine.fake.calls) == 1
    assert response["Cache-Control"] == "no-store"


def test_the_api_answers_a_held_call_202_naming_the_run_and_approver_then_made(engine):
    call = {"op": "acme.order.refund", "input": {"order_id": "2", "amount": 900}, "key": "refund-2"}
    response = post(client_of("alice"), call)
    assert response.status_code == 202
    body = response.json()
    assert (body["outcome"], body["run_id"], body["approver"]) == ("held", "call-refund-2", "finance-lead")
    assert body["approvals"][0]["approval_id"] == "approval-1"
    assert "held for approval by finance-lead" in body["message"]
    assert engine.fake.calls == []
    # The approver sees the run and decides it, as any run's.
    decided = client_of("finance-lead").post("/api/runs/call-refund-2/approvals", data=json.dumps(
        {"decision": "approve"}), content_type="application/json")
    assert decided.status_code == 202  # sent; the run applies it when it is next advanced
    done = post(client_of("alice"), call)  # the run is queued once approved: asking again makes the call
    assert done.status_code == 200, done.json()
    assert done.json()["output"] == {"refund_id": "re_1", "amount": 900}
    assert len(engine.fake.state["refunds"]) == 1


def test_the_api_refuses_a_denied_call_403_with_the_reason_and_run(engine):
    response = post(client_of("alice"), {"op": "acme.mail.send", "input": {"to": "bob"}})
    assert response.status_code == 403
    body = response.json()
    assert (body["code"], body["reason"], body["op"]) == ("policy_denied", "mail goes out from workflows only",
                                                          "acme.mail.send")
    assert Run.objects.get(pk=body["run_id"]).status == "failed"
    assert engine.fake.calls == []


def test_the_api_answers_a_vendor_failure_502_with_the_vendors_code(engine):
    response = post(client_of("alice"), {"op": "acme.order.get", "input": {"order_id": "nope"}})
    assert response.status_code == 502
    body = response.json()
    assert (body["code"], body["vendor_code"], body["status"]) == ("driver_failed", "not_found", 404)
    assert body["run_id"].startswith("call-")


@pytest.mark.parametrize("body, status, path", [
    ({"op": "acme.order.refund", "input": {"order_id": "1", "amount": -5}}, 400, ["input", "amount"]),
    ({"op": "acme.order.refund", "input": {"order_id": "1"}}, 400, ["input", "amount"]),
    ({"op": "acme.nothing.here", "input": {}}, 400, ["op"]),
    ({"input": {}}, 400, ["op"]),
    ({"op": 5}, 400, ["op"]),
    ({"op": "acme.order.get", "input": {"order_id": "1"}, "key": "a b"}, 400, ["key"]),
    ({"op": "acme.order.get", "inputs": {"order_id": "1"}}, 400, ["inputs"]),
])
def test_the_api_refuses_a_bad_call_naming_the_field(engine, body, status, path):
    before = written()
    response = post(client_of("alice"), body)
    assert response.status_code == status, response.json()
    assert response.json()["code"] == "invalid_input"
    assert path in [issue["path"] for issue in response.json()["issues"]]
    assert written() == before and engine.fake.calls == []


def test_the_api_refuses_who_may_not_call_and_who_is_not_signed_in(engine):
    make_user("vera")
    before = written()
    response = post(client_of("vera"), {"op": "acme.order.get", "input": {"order_id": "1"}})
    assert (response.status_code, response.json()["code"]) == (403, "permission_denied")
    anonymous = APIClient().post("/api/calls", data=json.dumps({"op": "acme.order.get"}),
                                 content_type="application/json")
    assert anonymous.status_code == 401
    # A key another caller's call holds: taken, and nothing about that call is told.
    post(client_of("alice"), {"op": "acme.order.get", "input": {"order_id": "1"}, "key": "mine"})
    make_user("sam", perms=["runs.start_workflow"])
    taken = post(client_of("sam"), {"op": "acme.order.get", "input": {"order_id": "1"}, "key": "mine"})
    assert (taken.status_code, taken.json()["code"]) == (409, "run_exists")
    assert "The key mine is taken" in taken.json()["error"]
    assert written()[0] == before[0] + 1 and len(engine.fake.calls) == 1


def test_a_key_another_caller_used_is_409_run_exists_even_for_who_may_see_that_call(engine):
    post(client_of("alice"), {"op": "acme.order.get", "input": {"order_id": "1"}, "key": "shared"})
    make_user("olga", perms=["runs.start_workflow", "runs.view_any_run"])
    before = written()
    taken = post(client_of("olga"), {"op": "acme.order.get", "input": {"order_id": "1"}, "key": "shared"})
    assert taken.status_code == 409, taken.json()
    assert taken.json()["code"] == "run_exists"
    assert taken.json()["error"] == ("The key shared is taken by another caller's call (run call-shared); "
                                     "use another key")
    assert written() == before and len(engine.fake.calls) == 1
    with pytest.raises(CommandError, match=r"The key shared is taken by another caller's call .*\[run_exists\]"):
        run_command("acme.order.get", "--set", "order_id=1", "--key", "shared", "--as", "olga")


# ---- the command --------------------------------------------------------------------------------


def run_command(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("call", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_the_command_prints_the_reply_of_an_allowed_call(engine):
    out, err = run_command("acme.order.get", "--json", '{"order_id": "2"}', "--as", "alice", "--key", "k")
    assert json.loads(out) == {"order_id": "2", "total": 5000, "handle": "h-2"}
    assert err.strip() == "acme.order.get was called (run call-k)"
    out, _ = run_command("acme.order.get", "--set", "order_id=2", "--as", "alice", "--key", "k")
    assert json.loads(out)["total"] == 5000 and len(engine.fake.calls) == 1


def test_the_command_says_a_held_call_is_held_and_exits_3(engine):
    with pytest.raises(SystemExit) as held:
        run_command("acme.order.refund", "--set", "order_id=2", "--set", "amount=900", "--as", "alice", "--key", "r")
    assert held.value.code == 3
    run = Run.objects.get(pk="call-r")
    assert run.status == "waiting"
    approvals.decide(run_id=run.id, decision="approve", by="finance-lead", timeout=0)
    out, _ = run_command("acme.order.refund", "--set", "order_id=2", "--set", "amount=900", "--as", "alice",
                         "--key", "r")
    assert json.loads(out) == {"refund_id": "re_1", "amount": 900}


def test_the_command_says_on_stderr_what_it_waits_for_and_when_it_stops(engine):
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(SystemExit) as held:
        call_command("call", "acme.order.refund", "--set", "order_id=2", "--set", "amount=900", "--as", "alice",
                     "--key", "w", "--wait", "0.3", stdout=out, stderr=err)
    assert held.value.code == 3
    said = err.getvalue().splitlines()
    assert said[0] == "waiting up to 0.3 s for approval 'Refund needs finance' by finance-lead (run call-w) ..."
    assert re.fullmatch(r"stopped waiting after \d+ s: it is still held", said[1]), said  # 0 s, or 1 on a busy machine
    assert out.getvalue().startswith("acme.order.refund is held for approval by finance-lead")
    # Without --wait, or once made, nothing is said about waiting.
    approvals.decide(run_id="call-w", decision="approve", by="finance-lead", timeout=0)
    out, err = io.StringIO(), io.StringIO()
    call_command("call", "acme.order.refund", "--set", "order_id=2", "--set", "amount=900", "--as", "alice",
                 "--key", "w", "--wait", "5", stdout=out, stderr=err)
    assert json.loads(out.getvalue())["refund_id"] == "re_1"
    assert err.getvalue().strip() == "acme.order.refund was called (run call-w)"


@pytest.mark.parametrize("args, words", [
    (["acme.mail.send", "--json", '{"to": "bob"}'], "mail goes out from workflows only (run call-"),
    (["acme.order.refund", "--json", '{"order_id": "1", "amount": 0}'], "input.amount: Input should be greater"),
    (["acme.order.refund", "--json", '{"order_id": "1", "amount": '], "--json is not valid JSON"),
    (["acme.order.refund", "--json", "[1]"], "The input to acme.order.refund is a JSON object"),
    (["acme.order.nope"], "'acme.order.nope' is not an operation of this config"),
    (["acme.order.get", "--set", "order_id=1", "--key", "no spaces"], "The key is not valid"),
    (["acme.order.get", "--json", "{}", "--json-file", "x.json"], "give --json or --json-file, not both"),
])
def test_the_command_refuses_in_one_line_naming_what_is_wrong(engine, args, words):
    before_runs = Run.objects.exclude(status="failed").count()
    with pytest.raises(CommandError) as refused:
        run_command(*args, "--as", "alice")
    assert words in str(refused.value)
    assert Run.objects.exclude(status="failed").count() == before_runs
    assert engine.fake.calls == []


def test_the_answer_to_dict_is_what_the_api_sends():
    held = CallAnswer("held", "x.y.z", "call-1", approvals=[{"approval_id": "approval-1", "title": "t",
                                                             "approver": "group:finance"}])
    assert held.to_dict() == {"outcome": "held", "op": "x.y.z", "run_id": "call-1", "repeated": False,
                              "message": "x.y.z is held for approval by group:finance (approval-1): run call-1 "
                                         "makes the call once it is approved",
                              "approvals": held.approvals, "approver": "group:finance"}


# ---- the desk -----------------------------------------------------------------------------------


def test_a_held_direct_call_is_on_the_desk_like_any_run(engine):
    from django.test import Client

    from runs.seed import seed_person

    answer = post(client_of("alice"), {"op": "acme.order.refund", "input": {"order_id": "2", "amount": 900},
                                       "key": "desk"}).json()
    approver = seed_person(username="finance-lead", staff=True, perms=("runs.start_workflow",))
    desk = Client()
    desk.force_login(approver)
    page = desk.get(f"/admin/runs/run/{answer['run_id']}/change/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "acme.order.refund" in text and "call-desk" in text
    inbox = desk.get("/admin/runs/approval/").content.decode()
    assert "call-desk" in inbox


def test_a_direct_call_takes_no_message_on_any_surface(engine):
    from runs.models import RunMessage

    answer = post(client_of("alice"), {"op": "acme.order.refund", "input": {"order_id": "2", "amount": 900},
                                       "key": "msg"}).json()
    sent = client_of("alice").post(f"/api/runs/{answer['run_id']}/messages", data=json.dumps(
        {"topic": "shipped", "payload": {}}), content_type="application/json")
    assert sent.status_code == 400, sent.json()
    assert sent.json()["code"] == "invalid_input"
    assert sent.json()["error"] == ("Run call-msg is a direct call (one operation called outside any workflow); it "
                                    "reads no messages")
    with pytest.raises(CommandError, match="is a direct call .* it reads no messages"):
        call_command("send", "call-msg", "shipped", "--as", "alice", stdout=io.StringIO())
    assert not RunMessage.objects.exists()
