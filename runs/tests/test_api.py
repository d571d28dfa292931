"""The JSON API as an integration sees it: status codes, error shapes, who may see and decide what."""
from __future__ import annotations

import json
import threading
import time

import pytest
from django.db import connection
from pydantic import BaseModel, Field
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from runs import selectors, services
from runs.api import views
from runs.approvals import services as approvals
from runs.authoring import define_workflow
from runs.models import DecisionMessage, Run
from runs.policies import allow, approve, approved_for, define_policy
from runs.testing import make_user
from runs.tests.fixtures import GET, REFUND


class RefundInput(BaseModel):
    order_id: str = Field(min_length=1)
    amount: int = Field(gt=0)


def refund_run(ctx, input: RefundInput):
    order = ctx.acme.order.get({"order_id": input.order_id})
    refund = ctx.acme.order.refund({"order_id": order.order_id, "amount": input.amount})
    return {"refund": refund.refund_id, "amount": refund.amount}


def ask_run(ctx, input):
    ok = ctx.approval("Refund order 1", approver="bob", covers=["acme.order.refund"])
    refund = ctx.acme.order.refund({"order_id": "1", "amount": 10})
    return {"refund": refund.refund_id, "by": ok.approved_by}


def nap_run(ctx, input):
    ctx.sleep(hours=1)
    return {"slept": True}


refund_flow = define_workflow(
    name="refund", title="Refund an order", input=RefundInput, uses=[GET, REFUND], run=refund_run
)
ask_flow = define_workflow(name="ask", title="Ask bob first", uses=[REFUND, "approval"], run=ask_run)
nap_flow = define_workflow(name="nap", uses=["sleep"], run=nap_run)

def refunds_need_bob(call):
    """Money needs bob: a policy hold on every refund until bob approved one."""
    if call.op_id != "acme.order.refund" or approved_for(call.run.approvals, call.op_id, "bob"):
        return allow()
    return approve("bob", "Refunds need bob")


money_needs_bob = define_policy(refunds_need_bob, version="t1")


def client_for(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def post(client: APIClient, url: str, body=None):
    return client.post(url, data=json.dumps(body if body is not None else {}), content_type="application/json")


@pytest.fixture
def people(alice):
    return {
        "alice": alice,
        "bob": make_user("bob"),
        "carol": make_user("carol"),
        "olga": make_user("olga", perms=["runs.view_any_run", "runs.operate_runs"]),
    }


@pytest.fixture
def engine(engine_for):
    return engine_for(refund_flow, ask_flow, nap_flow, policy=money_needs_bob)


@pytest.fixture
def held(engine, people):
    """A refund run alice started, held by the policy for bob."""
    run = engine.run("refund", {"order_id": "1", "amount": 10})
    assert run.status == "waiting"
    return run


@pytest.fixture
def fast_decide(monkeypatch):
    monkeypatch.setattr(views, "DECIDE_WAIT_SECONDS", 0.2)


# ---- workflows and connectors --------------------------------------------------------------------


def test_workflows_are_described_with_their_input_schema(engine, people):
    client = client_for(people["carol"])
    response = client.get("/api/workflows")
    assert response.status_code == 200
    by_name = {w["name"]: w for w in response.json()["results"]}
    assert set(by_name) >= {"refund", "ask", "nap"}
    refund = by_name["refund"]
    assert refund["title"] == "Refund an order"
    assert refund["trigger"] == "manual"
    assert refund["ops"] == ["acme.order.get", "acme.order.refund"]
    assert refund["input"]["properties"]["amount"]["type"] == "integer"
    assert refund["input"]["required"] == ["order_id", "amount"]
    assert by_name["ask"]["builtins"] == ["approval"]

    one = client.get("/api/workflows/nap")
    assert one.status_code == 200 and one.json()["builtins"] == ["sleep"]
    missing = client.get("/api/workflows/nope")
    assert missing.status_code == 404
    assert missing.json() == {"error": "No workflow nope", "code": "workflow_not_found"}


def test_connectors_list_operations_with_their_contracts(engine, people):
    response = client_for(people["carol"]).get("/api/connectors")
    assert response.status_code == 200
    by_vendor = {c["vendor"]: c for c in response.json()["results"]}
    # The config's own connector, and sanoma's (the change's operations, in every config).
    assert set(by_vendor) == {"acme", "sanoma"}
    acme = by_vendor["acme"]
    ops = {o["id"]: o for o in acme["operations"]}
    assert set(ops) == {"acme.order.get", "acme.order.refund", "acme.mail.send", "acme.post.publish"}
    assert ops["acme.order.refund"]["effect"] == "money" and ops["acme.order.refund"]["idempotent"] is False
    assert ops["acme.order.get"]["effect"] == "read" and ops["acme.order.get"]["idempotent"] is True
    assert ops["acme.order.refund"]["input"]["required"] == ["order_id", "amount"]
    assert "refund_id" in ops["acme.order.refund"]["output"]["properties"]


# ---- starting runs -------------------------------------------------------------------------------


def test_start_answers_201_then_200_for_the_same_idempotent_start(engine, people):
    client = client_for(people["alice"])
    body = {"workflow": "refund", "input": {"order_id": "1", "amount": 10}, "run_id": "refund-1"}
    first = post(client, "/api/runs", body)
    assert first.status_code == 201, first.json()
    assert first.json()["run_id"] == "refund-1"
    assert first.json()["status"] == "queued" and first.json()["started_by"] == "alice"

    again = post(client, "/api/runs", body)
    assert again.status_code == 200 and again.json()["run_id"] == "refund-1"
    assert Run.objects.count() == 1

    other = post(client, "/api/runs", {**body, "input": {"order_id": "1", "amount": 11}})
    assert other.status_code == 400
    assert other.json()["code"] == "invalid_input"
    assert "already exists with a different input" in other.json()["error"]
    assert other.json()["differs"] == ["input"]


def test_start_without_run_id_gets_a_new_id(engine, people):
    response = post(client_for(people["alice"]), "/api/runs", {"workflow": "nap"})
    assert response.status_code == 201
    assert response.json()["run_id"].startswith("nap-")


def test_input_refused_by_the_schema_is_400_with_issues_and_starts_nothing(engine, people):
    response = post(
        client_for(people["alice"]), "/api/runs", {"workflow": "refund", "input": {"order_id": "", "amount": 0}}
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid_input"
    assert "does not match refund's schema" in body["error"]
    assert {tuple(i["path"]) for i in body["issues"]} == {("order_id",), ("amount",)}
    assert Run.objects.count() == 0


def test_unknown_workflow_is_404_invalid_input_with_an_issue_at_workflow(engine, people):
    response = post(client_for(people["alice"]), "/api/runs", {"workflow": "nope", "input": {}})
    assert response.status_code == 404
    body = response.json()
    assert body["code"] == "invalid_input"
    assert [i["path"] for i in body["issues"]] == [["workflow"]]


def test_post_without_json_content_type_is_415(engine, people):
    client = client_for(people["alice"])
    form = client.post("/api/runs", {"workflow": "nap"})  # multipart form data
    assert form.status_code == 415
    assert form.json()["code"] == "unsupported_media_type"
    text = client.post("/api/runs", data='{"workflow": "nap"}', content_type="text/plain")
    assert text.status_code == 415
    bare = client.generic("POST", "/api/runs", data="")
    assert bare.status_code == 415
    assert Run.objects.count() == 0


@pytest.mark.parametrize(
    ("raw", "path"),
    [("{not json", []), ("", []), ("[1, 2]", []), ('"refund"', []), ('{"workflow": "nap", "inputs": {}}', ["inputs"]),
     ('{"input": {}}', ["workflow"])],
)
def test_malformed_or_empty_body_is_400(engine, people, raw, path):
    response = client_for(people["alice"]).post("/api/runs", data=raw, content_type="application/json")
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "invalid_input"
    assert path in [i["path"] for i in body["issues"]]
    assert Run.objects.count() == 0


def test_a_user_without_start_permission_gets_403(engine, people):
    response = post(client_for(people["carol"]), "/api/runs", {"workflow": "nap"})
    assert response.status_code == 403
    assert response.json() == {"error": "carol may not start nap", "code": "permission_denied"}
    assert Run.objects.count() == 0


def test_unauthenticated_requests_are_refused(engine, people):
    anonymous = APIClient()
    response = anonymous.get("/api/runs")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response.json()["code"] == "not_authenticated"
    bad = APIClient()
    bad.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert bad.get("/api/runs").status_code == 401
    assert post(anonymous, "/api/runs", {"workflow": "nap"}).status_code == 401
    assert Run.objects.count() == 0


def test_token_auth_works_and_acts_as_the_tokens_user(engine, people):
    token = Token.objects.create(user=people["alice"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    response = post(client, "/api/runs", {"workflow": "nap"})
    assert response.status_code == 201 and response.json()["started_by"] == "alice"
    assert client.get("/api/runs/").json()["count"] == 1  # a trailing slash is fine too


def test_session_auth_works_and_needs_csrf_for_changes(engine, people):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(people["alice"])
    assert client.get("/api/runs").status_code == 200
    refused = post(client, "/api/runs", {"workflow": "nap"})
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["error"]


def test_responses_are_not_cached_nor_sniffed(engine, people):
    client = client_for(people["alice"])
    for response in (client.get("/api/workflows"), client.get("/api/runs/nope"), APIClient().get("/api/runs"),
                     post(client, "/api/runs", {"workflow": "nope"})):
        assert response["Cache-Control"] == "no-store"
        assert response["X-Content-Type-Options"] == "nosniff"


def test_an_unexpected_error_is_500_without_its_message(engine, people, monkeypatch, caplog):
    def broken(**kwargs):
        raise RuntimeError("connection to db-7 with password hunter2 failed")

    monkeypatch.setattr(selectors, "list_runs", broken)
    with caplog.at_level("ERROR", logger="sanoma.api"):
        response = client_for(people["alice"]).get("/api/runs")
    assert response.status_code == 500
    assert response.json() == {"error": "Something went wrong"}
    assert "hunter2" not in response.content.decode()
    assert "hunter2" in caplog.text  # logged for the operator instead


def test_an_unknown_api_path_is_a_json_404(engine, people):
    response = client_for(people["alice"]).get("/api/nothing/here")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_the_openapi_schema_describes_the_endpoints(engine, people):
    response = APIClient().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = json.loads(response.content)
    paths = set(schema["paths"])
    assert {"/api/runs", "/api/runs/{run_id}", "/api/runs/{run_id}/approvals/{approval_id}", "/api/approvals",
            "/api/workflows", "/api/connectors"} <= paths
    assert set(schema["paths"]["/api/runs"]["post"]["responses"]) >= {"200", "201", "400", "403", "404", "415"}


# ---- reading runs --------------------------------------------------------------------------------


def test_list_runs_filters_and_pages(engine, people):
    make_user("dave", perms=["runs.start_workflow"])
    engine.start("nap", run_id="nap-1")
    engine.start("nap", run_id="nap-2", by="dave")
    engine.start("refund", {"order_id": "1", "amount": 10}, run_id="refund-1")
    engine.drain()
    client = client_for(people["olga"])

    every = client.get("/api/runs").json()
    assert every["count"] == 3 and [r["run_id"] for r in every["results"]] == ["refund-1", "nap-2", "nap-1"]
    assert client.get("/api/runs?workflow=nap").json()["count"] == 2
    assert [r["run_id"] for r in client.get("/api/runs?started_by=dave").json()["results"]] == ["nap-2"]
    waiting = client.get("/api/runs?status=waiting").json()["results"]
    assert {r["run_id"] for r in waiting} == {"nap-1", "nap-2", "refund-1"}
    assert [r["pending_approvals"] for r in waiting if r["run_id"] == "refund-1"] == [1]
    assert client.get("/api/runs?status=finished").json()["count"] == 0
    page = client.get("/api/runs?limit=1&offset=1").json()
    assert [r["run_id"] for r in page["results"]] == ["nap-2"]
    assert page["next"].endswith("/api/runs?limit=1&offset=2") and page["previous"].endswith("/api/runs?limit=1")

    bad = client.get("/api/runs?limit=0")
    assert bad.status_code == 400 and bad.json()["issues"][0]["path"] == ["limit"]
    assert client.get("/api/runs?status=sleeping").json()["issues"][0]["path"] == ["status"]
    assert client.get("/api/runs?limit=x").status_code == 400


def test_runs_are_listed_only_to_who_may_see_them(held, engine, people):
    engine.run("nap", run_id="nap-1")
    ids = lambda user: {r["run_id"] for r in client_for(people[user]).get("/api/runs").json()["results"]}
    assert ids("alice") == {held.id, "nap-1"}
    assert ids("bob") == {held.id}  # the approver
    assert ids("olga") == {held.id, "nap-1"}  # an operator
    assert ids("carol") == set()


def test_a_run_is_visible_to_its_starter_approver_and_operators_only(held, people):
    for user in ("alice", "bob", "olga"):
        response = client_for(people[user]).get(f"/api/runs/{held.id}")
        assert response.status_code == 200, user
        body = response.json()
        assert body["run"]["status"] == "waiting"
        assert [a["status"] for a in body["approvals"]] == ["pending"]
        assert body["approvals"][0]["op"] == "acme.order.refund"
        assert [r["type"] for r in body["ledger"]] == ["run.started", "op.called", "approval.requested"]
    for url in (f"/api/runs/{held.id}", f"/api/runs/{held.id}/ledger", f"/api/runs/{held.id}/result",
                f"/api/runs/{held.id}/approvals", f"/api/runs/{held.id}/approvals/approval-1"):
        hidden = client_for(people["carol"]).get(url)
        assert hidden.status_code == 404, url
        assert hidden.json() == {"error": f"No run {held.id}, or you may not see it", "code": "run_not_found"}


def test_ledger_lists_the_records_in_order(held, people):
    client = client_for(people["alice"])
    records = client.get(f"/api/runs/{held.id}/ledger").json()["results"]
    assert [r["seq"] for r in records] == sorted(r["seq"] for r in records)
    assert records[0]["type"] == "run.started" and records[0]["input"] == {"order_id": "1", "amount": 10}
    assert [r["type"] for r in records] == ["run.started", "op.called", "approval.requested"]
    assert records[2]["op"] == "acme.order.refund" and records[2]["approver"] == "bob"
    assert client.get("/api/runs/nope/ledger").status_code == 404


def test_result_gives_the_output_the_error_or_run_running(engine, people):
    client = client_for(people["alice"])
    done = engine.run("ask", run_id="ask-1")
    approvals.decide(run_id=done.id, decision="approve", by="bob", timeout=0)
    engine.drain()
    finished = client.get("/api/runs/ask-1/result")
    assert finished.status_code == 200
    assert finished.json() == {"run_id": "ask-1", "status": "finished", "output": {"refund": "re_1", "by": "bob"}}

    failed = engine.run("refund", {"order_id": "9", "amount": 1}, run_id="refund-9")
    assert failed.status == "failed"
    response = client.get("/api/runs/refund-9/result")
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "driver_failed" and body["status"] == "failed" and "no order 9" in body["error"]
    assert body["run_error"]["code"] == "driver_failed"

    engine.run("nap", run_id="nap-1")
    started = time.monotonic()
    running = client.get("/api/runs/nap-1/result?timeout=0.3")
    assert time.monotonic() - started >= 0.3
    assert running.status_code == 409 and running.json()["code"] == "run_running"
    assert client.get("/api/runs/nap-1/result?timeout=-1").status_code == 400
    assert client.get("/api/runs/nope/result").status_code == 404


def test_cancel_is_for_the_starter_and_operators_and_asks_why(held, engine, people):
    why = {"reason": "the customer withdrew"}
    assert post(client_for(people["carol"]), f"/api/runs/{held.id}/cancel", why).status_code == 404
    by_approver = post(client_for(people["bob"]), f"/api/runs/{held.id}/cancel", why)
    assert by_approver.status_code == 403 and by_approver.json()["code"] == "permission_denied"

    client = client_for(people["alice"])
    unsaid = client.post(f"/api/runs/{held.id}/cancel")  # no body at all: no reason
    assert unsaid.status_code == 400 and unsaid.json()["issues"][0]["path"] == ["reason"]
    response = post(client, f"/api/runs/{held.id}/cancel", why)
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    again = post(client, f"/api/runs/{held.id}/cancel", why)
    assert again.status_code == 409 and again.json()["code"] == "run_ended"
    assert client.get(f"/api/runs/{held.id}/result").json()["code"] == "run_cancelled"

    engine.run("nap", run_id="nap-1")
    assert post(client_for(people["olga"]), "/api/runs/nap-1/cancel", why).status_code == 200


# ---- approvals -----------------------------------------------------------------------------------


def test_the_inbox_lists_what_you_may_decide_with_what_it_lets_through(held, engine, people):
    engine.run("ask", run_id="ask-1")
    inbox = client_for(people["bob"]).get("/api/approvals")
    assert inbox.status_code == 200
    items = inbox.json()["results"]
    assert [(i["run"]["run_id"], i["id"]) for i in items] == [("ask-1", "approval-1"), (held.id, "approval-1")]
    refund = items[1]
    assert refund["op"] == "acme.order.refund" and refund["input"] == {"order_id": "1", "amount": 10}
    assert refund["covers"] == ["acme.order.refund"]
    assert refund["rules"] == ["runs.tests.test_api.refunds_need_bob"]  # its policy; a workflow's own approval: none
    assert items[0]["rules"] == []
    assert refund["requested_by"] == "policy" and refund["title"] == "Refunds need bob"
    assert refund["run"] == {"run_id": held.id, "workflow": "refund", "status": "waiting", "started_by": "alice"}
    for user in ("carol", "alice"):
        assert client_for(people[user]).get("/api/approvals").json()["results"] == []


def test_a_user_who_is_not_the_approver_gets_403_and_nothing_is_sent(held, people):
    # An operator may see the run, so hears who the approver is.
    response = post(client_for(people["olga"]), f"/api/runs/{held.id}/approvals/approval-1", {"decision": "approve"})
    assert response.status_code == 403
    assert response.json() == {
        "error": "olga is not the approver; bob is (approval-1)", "code": "not_approver", "approver": "bob",
    }
    # Someone who may not see the run learns nothing about it: not its approver, not that it exists.
    response = post(client_for(people["carol"]), f"/api/runs/{held.id}/approvals/approval-1", {"decision": "approve"})
    assert response.status_code == 404
    assert response.json() == {"error": f"No run {held.id}, or you may not see it", "code": "run_not_found"}
    assert not DecisionMessage.objects.exists()


def test_a_decision_no_worker_applies_is_202_pending_then_applies(held, engine, people, fast_decide):
    client = client_for(people["bob"])
    response = post(client, f"/api/runs/{held.id}/approvals/approval-1", {"decision": "approve", "note": "ok"})
    assert response.status_code == 202
    assert response.json()["status"] == "pending"

    engine.drain()
    held.refresh_from_db()
    assert held.status == "finished", held.error
    state = client.get(f"/api/runs/{held.id}/approvals/approval-1").json()
    assert (state["status"], state["decided_by"], state["note"]) == ("approved", "bob", "ok")
    again = post(client, f"/api/runs/{held.id}/approvals/approval-1", {"decision": "reject"})
    assert again.status_code == 409
    assert again.json()["code"] in ("run_ended", "already_decided")


def test_a_decision_the_run_has_applied_is_200_with_the_decided_state(held, engine, people, monkeypatch):
    sent = approvals.send_decision

    def send_and_apply(**kwargs):
        message_id = sent(**kwargs)
        engine.drain()  # a worker picks it up at once
        return message_id

    monkeypatch.setattr(approvals, "send_decision", send_and_apply)
    response = post(client_for(people["bob"]), f"/api/runs/{held.id}/approvals",
                    {"decision": "approve", "note": "fine", "id": "msg-1"})
    assert response.status_code == 200
    body = response.json()
    decided = (body["status"], body["decided_by"], body["note"], body["decided_with"])
    assert decided == ("approved", "bob", "fine", "msg-1")
    held.refresh_from_db()
    assert held.status == "finished"


@pytest.mark.django_db(transaction=True)
def test_a_decision_with_a_worker_running_is_200(held, engine, people):
    def worker():
        try:
            deadline = time.monotonic() + 10
            while not DecisionMessage.objects.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            engine.drain()
        finally:
            connection.close()

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        response = post(client_for(people["bob"]), f"/api/runs/{held.id}/approvals/approval-1", {"decision": "reject"})
    finally:
        thread.join(timeout=15)
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "rejected"
    result = client_for(people["alice"]).get(f"/api/runs/{held.id}/result?timeout=5")
    assert result.status_code == 409 and result.json()["code"] == "approval_rejected"


def test_decision_refusals_have_their_codes(held, engine, people, fast_decide):
    client = client_for(people["bob"])
    maybe = post(client, f"/api/runs/{held.id}/approvals", {"decision": "maybe"})
    assert maybe.status_code == 400 and maybe.json()["issues"][0]["path"] == ["decision"]
    unknown = post(client, f"/api/runs/{held.id}/approvals/approval-7", {"decision": "approve"})
    assert unknown.status_code == 404 and unknown.json()["code"] == "no_pending_approval"
    no_run = post(client, "/api/runs/nope/approvals", {"decision": "approve"})
    assert no_run.status_code == 404 and no_run.json()["code"] == "run_not_found"
    form = client.post(f"/api/runs/{held.id}/approvals", {"decision": "approve"})
    assert form.status_code == 415

    engine.run("nap", run_id="nap-1")
    nothing = post(client_for(people["alice"]), "/api/runs/nap-1/approvals", {"decision": "approve"})
    assert nothing.status_code == 404 and nothing.json()["code"] == "no_pending_approval"

    services.cancel(run_id=held.id, by="alice", reason="no longer needed")
    ended = post(client, f"/api/runs/{held.id}/approvals", {"decision": "approve"})
    assert ended.status_code == 409 and ended.json()["code"] == "run_ended"
    assert not DecisionMessage.objects.exists()


def test_withdraw_is_for_the_starter_and_fails_the_run(held, engine, people):
    url = f"/api/runs/{held.id}/approvals/approval-1/withdraw"
    assert post(client_for(people["carol"]), url).status_code == 404
    by_approver = post(client_for(people["bob"]), url)
    assert by_approver.status_code == 403 and by_approver.json()["code"] == "permission_denied"

    response = post(client_for(people["alice"]), url, {"reason": "wrong order"})
    assert response.status_code == 200
    assert (response.json()["status"], response.json()["decided_by"]) == ("withdrawn", "alice")
    engine.drain()
    held.refresh_from_db()
    assert held.status == "failed" and held.error["code"] == "approval_withdrawn"
    again = post(client_for(people["alice"]), url)
    assert again.status_code == 409 and again.json()["code"] == "run_ended"


def test_a_decision_that_is_neither_approve_nor_reject_is_400_naming_both(held, people):
    response = post(client_for(people["bob"]), f"/api/runs/{held.id}/approvals/approval-1", {"decision": "yes"})
    assert response.status_code == 400
    said = response.json()
    assert said["code"] == "invalid_input"
    assert [(issue["path"], issue["message"]) for issue in said["issues"]] == [
        (["decision"], '"yes" is not one of: approve, reject')]
    assert not DecisionMessage.objects.exists()
