"""Input that never breaks anything: every bad body, id or argument is a clear refusal, and nothing is
written behind it (no run, no ledger record, no django-q task), on every surface."""
from __future__ import annotations

import io
import json
import logging
from typing import Any
from urllib.parse import quote as url_quote

import pytest
from django.contrib.admin.utils import quote
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client, override_settings
from django_q.models import OrmQ
from pydantic import BaseModel, Field, field_validator
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from connectors.errors import InvalidInput
from runs.approvals import services as approvals
from runs.authoring import define_workflow
from runs.models import LedgerRecord, Run
from runs.testing import make_user
from runs.tests.test_api import ask_flow, nap_flow
from runs.validation import MAX_DEPTH, RUN_ID_RULE, SAFE_INTEGER


class OrderInput(BaseModel):
    order_id: str = Field(min_length=1)
    amount_cents: int = Field(gt=0)
    note: str = ""
    serial: int | None = Field(default=None, ge=0, le=10**40)  # its schema allows integers beyond 2^53
    data: Any = None


def order_run(ctx, input: OrderInput):
    return {"order": input.order_id, "amount": input.amount_cents}


order_flow = define_workflow(name="order", input=OrderInput, run=order_run)


class Touchy(BaseModel):
    word: str

    @field_validator("word")
    @classmethod
    def never_boom(cls, value: str) -> str:
        if value == "boom":
            raise RuntimeError("a validator that breaks")
        return value


touchy_flow = define_workflow(name="touchy", input=Touchy, run=lambda ctx, input: {})

NASTY_IDS = ["a/b", "../../etc", "<script>", "  padded  ", "a\nb", "a b", "", "x" * 201, "r\x00", "caf\u00e9",
             "a%2Fb", "a?b", "a#b"]
GOOD_IDS = ["order-1001", "a.b:c@d_e", "X" * 200, "1"]


def written() -> tuple[int, int, int]:
    return Run.objects.count(), LedgerRecord.objects.count(), OrmQ.objects.count()


@pytest.fixture
def engine(engine_for):
    return engine_for(order_flow, touchy_flow, ask_flow, nap_flow)


@pytest.fixture
def api(engine, alice) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=alice)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def send(client: APIClient, url: str, raw: str | bytes, content_type: str = "application/json"):
    return client.generic("POST", url, data=raw, content_type=content_type)  # type: ignore[arg-type]  # bytes too


def start_body(input: Any, **more: Any) -> str:
    return json.dumps({"workflow": "order", "input": input, **more})


GOOD = {"order_id": "1001", "amount_cents": 500}


# ---- strict JSON against the workflow's input ------------------------------------------------------


@pytest.mark.parametrize(("input", "path", "code"), [
    ({**GOOD, "amount_cents": True}, ["amount_cents"], "int_type"),
    ({**GOOD, "amount_cents": 10**30}, ["amount_cents"], "unsafe_integer"),
    ({**GOOD, "data": -(2**53)}, ["data"], "unsafe_integer"),
    ({**GOOD, "amount_cents": "500"}, ["amount_cents"], "int_type"),
    ({**GOOD, "order_id": 1001}, ["order_id"], "string_type"),
    ({**GOOD, "data": {"deep": [1, 2**60]}}, ["data", "deep", 1], "unsafe_integer"),
])
def test_the_input_is_validated_strictly_as_json(api, input, path, code):
    before = written()
    response = send(api, "/api/runs", start_body(input))
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "invalid_input"
    assert [(i["path"], i["code"]) for i in body["issues"]] == [(path, code)]
    assert written() == before


def test_the_schema_may_allow_big_integers_and_the_safe_range_passes(api):
    big = send(api, "/api/runs", start_body({**GOOD, "serial": 10**30}))
    assert big.status_code == 201, big.content
    assert Run.objects.get(pk=big.json()["run_id"]).input["serial"] == 10**30
    edge = send(api, "/api/runs", start_body({**GOOD, "amount_cents": SAFE_INTEGER}))
    assert edge.status_code == 201, edge.content


def test_the_service_refuses_what_the_api_refuses(engine):
    before = written()
    with pytest.raises(InvalidInput) as refused:
        engine.start("order", {**GOOD, "amount_cents": True})
    assert refused.value.data["issues"][0]["path"] == ["amount_cents"]
    with pytest.raises(InvalidInput, match="NUL"):
        engine.start("order", {**GOOD, "note": "a\x00b"})
    with pytest.raises(InvalidInput, match="surrogate"):
        engine.start("order", {**GOOD, "data": {"k\ud800": 1}})
    assert written() == before


# ---- the body: size, depth, characters -----------------------------------------------------------


def test_a_body_over_the_limit_is_413_json(api):
    before = written()
    big = start_body({**GOOD, "note": "x" * (1024 * 1024)})
    response = send(api, "/api/runs", big)
    assert response.status_code == 413
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["code"] == "too_large"
    assert "1048576" in response.json()["error"]
    with override_settings(SANOMA_MAX_BODY_BYTES=100):
        small = send(api, "/api/runs", start_body({**GOOD, "note": "x" * 200}))
        assert small.status_code == 413 and small.json()["code"] == "too_large"
        admin = Client().post("/admin/login/", {"username": "x" * 200})
        assert admin.status_code == 413
    assert written() == before


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def test_nesting_deeper_than_the_limit_is_400(api):
    before = written()
    # The body object and the input object are two levels: data may hold MAX_DEPTH - 2 more.
    fits = send(api, "/api/runs", start_body({**GOOD, "data": _nested(MAX_DEPTH - 2)}))
    assert fits.status_code == 201, fits.content
    before = written()
    deeper = send(api, "/api/runs", start_body({**GOOD, "data": _nested(MAX_DEPTH - 1)}))
    assert deeper.status_code == 400 and deeper.json()["code"] == "invalid_input"
    assert deeper.json()["issues"][0]["code"] == "too_deep"
    assert deeper.json()["issues"][0]["path"][:3] == ["input", "data", 0]
    very = send(api, "/api/runs", '{"workflow": "order", "input": {"data": ' + "[" * 10_000 + "]" * 10_000 + "}}")
    assert very.status_code == 400 and very.json()["code"] == "invalid_input"
    assert "64" in very.json()["error"]
    assert written() == before


@pytest.mark.parametrize(("raw", "path"), [
    ('{"workflow": "order", "input": {"order_id": "1", "amount_cents": 5, "note": "\\ud800"}}', ["input", "note"]),
    ('{"workflow": "order", "input": {"order_id": "1", "amount_cents": 5, "note": "a\\u0000b"}}', ["input", "note"]),
    ('{"workflow": "order", "input": {"order_id": "1", "amount_cents": 5, "data": {"k\\udfff": 1}}}',
     ["input", "data", "k\\udfff"]),
    ('{"workflow": "order", "input": {"order_id": "1", "amount_cents": 5, "data": ["ok", "\\u0000"]}}',
     ["input", "data", 1]),
    ('{"workflow": "order\\u0000", "input": {}}', ["workflow"]),
    ('{"workflow": "order", "input": {"order_id": "1", "amount_cents": 5}, "run_id": "r\\ud800"}', ["run_id"]),
])
def test_a_lone_surrogate_or_nul_anywhere_is_400_naming_the_path(api, raw, path):
    before = written()
    response = send(api, "/api/runs", raw)
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "invalid_input"
    assert body["issues"][0]["path"] == path
    assert body["issues"][0]["code"] == "invalid_character"
    assert written() == before


def test_other_malformed_bodies_are_400(api):
    before = written()
    for raw in (b'{"workflow": "order", "input": {"x": NaN}}', b'{"workflow": "\xff"}', b"{", b"[1]"):
        response = send(api, "/api/runs", raw)
        assert response.status_code == 400, (raw, response.content)
        assert response.json()["code"] == "invalid_input"
    assert written() == before


def test_a_decision_note_with_nul_writes_nothing(api, engine, alice):
    bob = make_user("bob")
    run = engine.run("ask", {})
    token, _ = Token.objects.get_or_create(user=bob)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    before = written()
    response = send(client, f"/api/runs/{run.id}/approvals", '{"decision": "approve", "note": "a\\u0000"}')
    assert response.status_code == 400 and response.json()["issues"][0]["path"] == ["note"]
    assert written() == before


# ---- run ids ------------------------------------------------------------------------------------


@pytest.mark.parametrize("run_id", NASTY_IDS)
def test_a_run_id_breaking_the_rule_is_refused_by_the_service(engine, run_id):
    before = written()
    with pytest.raises(InvalidInput) as refused:
        engine.start("order", GOOD, run_id=run_id)
    assert RUN_ID_RULE in refused.value.message
    assert refused.value.data["issues"][0]["path"] == ["runId"]
    assert written() == before


@pytest.mark.parametrize("run_id", NASTY_IDS)
def test_a_run_id_breaking_the_rule_is_refused_by_the_api(api, run_id):
    before = written()
    response = send(api, "/api/runs", start_body(GOOD, run_id=run_id))
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "invalid_input"
    assert response.json()["issues"][0]["path"] == ["run_id"]
    if "\x00" not in run_id:  # a NUL is refused with the body, before the rule is read
        assert RUN_ID_RULE in response.json()["error"]
    assert written() == before


@pytest.mark.parametrize("run_id", GOOD_IDS)
def test_a_run_id_keeping_the_rule_is_started_and_fetched(api, run_id):
    started = send(api, "/api/runs", start_body(GOOD, run_id=run_id))
    assert started.status_code == 201, started.content
    assert started.json()["run_id"] == run_id
    fetched = api.get(f"/api/runs/{run_id}")
    assert fetched.status_code == 200 and fetched.json()["run"]["run_id"] == run_id


@pytest.mark.parametrize("path", ["%3Cscript%3E", "%20%20padded%20%20", "a%0Ab", "..", "x" * 201])
def test_a_run_id_in_an_api_path_breaking_the_rule_is_400(api, path):
    for suffix in ("", "/ledger", "/result", "/approvals", "/approvals/approval-1"):
        response = api.get(f"/api/runs/{path}{suffix}")
        assert response.status_code in (400, 404), (suffix, response.status_code)
        if response.status_code == 400:
            assert RUN_ID_RULE in response.json()["error"]
    before = written()
    cancel = api.post(f"/api/runs/{path}/cancel")
    assert cancel.status_code in (400, 404)
    assert written() == before


@pytest.mark.parametrize("run_id", ["a/b", "<script>", "  padded  ", "a b", "x" * 201])
def test_a_run_id_breaking_the_rule_is_refused_by_the_commands(engine, run_id):
    before = written()
    for command, args in (("start", ["order", "--set", "order_id=1", "--set", "amount_cents=5", "--run-id", run_id]),
                          ("cancel", [run_id, "--reason", "x"]), ("decide", [run_id, "approve"]), ("show", [run_id])):
        with pytest.raises(CommandError) as refused:
            call_command(command, *args, "--as", "alice", stdout=io.StringIO())
        assert RUN_ID_RULE in str(refused.value), command
    assert written() == before


@pytest.mark.parametrize("run_id", ["a/b", "<script>", "  padded  ", "a\nb", "x" * 201])
def test_a_run_id_breaking_the_rule_is_refused_by_the_admin_form(engine, alice, run_id):
    alice.is_staff = True
    alice.save(update_fields=["is_staff"])
    client = Client()
    client.force_login(alice)
    before = written()
    response = client.post("/admin/runs/run/start/", {"_workflow": "nap", "_run_id": run_id})
    assert response.status_code == 200
    assert response.context["form"].errors["_run_id"] == [RUN_ID_RULE]
    assert written() == before


# ---- the admin: no page answers 500 for any id ---------------------------------------------------


ADMIN_NASTY = ["9" * 30, "-1", "a\nb", "a/b", "../../etc", "<script>", "  padded  ", "%", "_0A", "a?b#c", "\u00e9",
               "x" * 300, "1"]


def test_no_admin_page_answers_500_for_any_id(engine, alice):
    root = make_user("root", superuser=True)
    # Runs stored before the rule (their ids break it) must still show, link and open.
    legacy = ["a\nb", "a/b", "<script>", "  padded  "]
    for run_id in legacy:
        Run.objects.create(id=run_id, workflow="nap", app_version="v", input={}, started_by="alice",
                           created_at="2030-01-01T00:00:00Z", updated_at="2030-01-01T00:00:00Z")
        LedgerRecord.objects.create(record_id=f"{run_id}:0", run_id=run_id, seq=0, at=1, v=1, app="t",
                                    actor="alice", workflow="nap", kind="run.started", body={})
    client = Client(raise_request_exception=False)
    client.force_login(root)
    urls = ["/admin/runs/run/", "/admin/runs/ledgerrecord/", "/admin/runs/approval/?status=all"]
    for value in ADMIN_NASTY + legacy:
        for key in (quote(value), url_quote(value, safe="")):
            for model in ("run", "approval", "ledgerrecord", "appversion", "workflowentry"):
                urls += [f"/admin/runs/{model}/{key}/", f"/admin/runs/{model}/{key}/change/",
                         f"/admin/runs/{model}/{key}/history/", f"/admin/runs/{model}/{key}/delete/"]
            urls += [f"/admin/runs/run/{key}/cancel/", f"/admin/runs/workflowentry/{key}/permissions/"]
        query = url_quote(value)
        urls += [f"/admin/runs/run/?q={query}", f"/admin/runs/ledgerrecord/?run_id={query}",
                 f"/admin/runs/run/?started_by={query}", f"/admin/runs/run/start/?workflow={query}",
                 f"/admin/runs/run/?version={query}", f"/admin/runs/appversion/?q={query}"]
    failures = []
    # Django's quote and the URL's own often spell an id alike, and the legacy ids are nasty ones too:
    # each distinct URL once (about 560 of the 850 written).
    for url in dict.fromkeys(urls):
        response = client.get(url)
        if response.status_code >= 500:
            failures.append((url, response.status_code))
    posts = list(dict.fromkeys(f"/admin/runs/run/{quote(v)}/cancel/" for v in ADMIN_NASTY + legacy))
    for url in posts:
        response = client.post(url)
        if response.status_code >= 500:
            failures.append((url, response.status_code))
    assert not failures
    # the legacy runs' pages open
    for run_id in legacy:
        page = client.get(f"/admin/runs/run/{quote(run_id)}/change/")
        assert page.status_code == 200, run_id


def test_the_ledger_list_shows_who_decided(engine, alice):
    make_user("bob")
    run = engine.run("ask", {})
    approvals.decide(run_id=run.id, decision="approve", by="bob", timeout=0)
    engine.drain()
    record = LedgerRecord.objects.get(run_id=run.id, kind="approval.decided")
    assert record.actor == "bob"
    root = make_user("root", superuser=True)
    client = Client()
    client.force_login(root)
    page = client.get("/admin/runs/ledgerrecord/", {"run_id": run.id, "kind": "approval.decided"})
    assert page.status_code == 200
    assert 'class="field-actor">bob<' in page.content.decode()


# ---- commands -----------------------------------------------------------------------------------


def test_start_set_reads_each_value_by_the_fields_type(engine):
    out = io.StringIO()
    call_command("start", "order", "--as", "alice", "--set", "order_id=1001", "--set", "amount_cents=500",
                 "--set", "note=true", "--set", "data=[1, 2]", "--run-id", "cmd-1", stdout=out)
    assert out.getvalue().startswith("cmd-1 ")
    assert Run.objects.get(pk="cmd-1").input == {"order_id": "1001", "amount_cents": 500, "note": "true",
                                                 "data": [1, 2]}
    before = written()
    with pytest.raises(CommandError, match="amount_cents"):
        call_command("start", "order", "--as", "alice", "--set", "order_id=1", "--set", "amount_cents=true",
                     stdout=io.StringIO())
    assert written() == before


def test_start_again_with_the_same_run_id_says_it_is_the_run_started_before(engine):
    args = ("start", "order", "--as", "alice", "--set", "order_id=7", "--set", "amount_cents=5", "--run-id", "cmd-2")
    first, again, said = io.StringIO(), io.StringIO(), io.StringIO()
    call_command(*args, stdout=first, stderr=io.StringIO())
    before = written()
    call_command(*args, stdout=again, stderr=said)
    assert again.getvalue().split()[0] == "cmd-2" and written() == before
    assert "cmd-2 was started before with this id and input: this is that run, not a new one" in said.getvalue()
    with pytest.raises(CommandError, match="input"):
        call_command("start", "order", "--as", "alice", "--set", "order_id=8", "--set", "amount_cents=5",
                     "--run-id", "cmd-2", stdout=io.StringIO())
    assert written() == before


def test_input_file_errors_are_one_line(engine, tmp_path):
    bad_utf8 = tmp_path / "bad.json"
    bad_utf8.write_bytes(b'{"order_id": "\xff"}')
    not_json = tmp_path / "not.json"
    not_json.write_text("{oops")
    deep = tmp_path / "deep.json"
    deep.write_text('{"data": ' + "[" * 10_000 + "]" * 10_000 + "}")
    surrogate = tmp_path / "surrogate.json"
    surrogate.write_text('{"order_id": "\\ud800"}')
    array = tmp_path / "array.json"
    array.write_text("[1]")
    before = written()
    for path, says in ((tmp_path / "missing.json", "No such file"), (bad_utf8, "not UTF-8"),
                       (not_json, "not valid JSON"), (deep, "deeper than 64"), (surrogate, "surrogate"),
                       (array, "must be a JSON object"), (tmp_path, "Is a directory")):
        with pytest.raises(CommandError) as refused:
            call_command("start", "order", "--as", "alice", "--input-file", str(path), stdout=io.StringIO())
        message = str(refused.value)
        assert says in message and "\n" not in message and "Traceback" not in message, message
    assert written() == before


def test_command_arguments_with_a_lone_surrogate_are_refused(engine):
    before = written()
    with pytest.raises(CommandError, match="--set contains a lone surrogate"):
        call_command("start", "order", "--as", "alice", "--set", "order_id=\udcff", stdout=io.StringIO())
    assert written() == before


def test_paging_out_of_range_in_the_runs_command_is_a_usage_error(engine):
    with pytest.raises(CommandError):
        call_command("runs", "--offset", str(2**63), stdout=io.StringIO())
    with pytest.raises(CommandError):
        call_command("runs", "--limit", "0", stdout=io.StringIO())


# ---- cancel and withdraw without a body; paging; errors ------------------------------------------


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
def test_withdraw_needs_no_body_and_a_cancel_without_one_is_asked_why(api, engine, content_type):
    kwargs = {} if content_type is None else {"content_type": content_type}
    napping = engine.run("nap", {})
    before = written()
    unsaid = api.generic("POST", f"/api/runs/{napping.id}/cancel", data="", **kwargs)
    assert unsaid.status_code == 400, unsaid.content
    assert [issue["path"] for issue in unsaid.json()["issues"]] == [["reason"]]
    assert written() == before and Run.objects.get(pk=napping.id).status == "waiting"  # nothing cancelled
    asking = engine.run("ask", {})
    withdrawn = api.generic("POST", f"/api/runs/{asking.id}/approvals/approval-1/withdraw", data="", **kwargs)
    assert withdrawn.status_code == 200, withdrawn.content
    assert withdrawn.json()["status"] == "withdrawn"


def test_a_body_that_is_not_json_is_still_415(api, engine):
    napping = engine.run("nap", {})
    response = api.generic("POST", f"/api/runs/{napping.id}/cancel", data="please", content_type="text/plain")
    assert response.status_code == 415


@pytest.mark.parametrize("query", [f"offset={2**63}", "offset=-1", "offset=abc", "offset=" + "9" * 5000,
                                   "limit=0", "limit=501", "limit=x", "limit=1e400"])
def test_paging_out_of_range_is_400(api, query):
    response = api.get(f"/api/runs?{query}")
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "invalid_input"


def test_the_largest_offset_answers_an_empty_page(api, engine):
    engine.start("nap", {})
    response = api.get(f"/api/runs?offset={2**63 - 1}")
    assert response.status_code == 200, response.content
    assert response.json()["results"] == []


@pytest.mark.parametrize("timeout", ["nan", "inf", "-1", "61", "x"])
def test_a_result_timeout_out_of_range_is_400(api, engine, timeout):
    run = engine.start("nap", {})
    response = api.get(f"/api/runs/{run.id}/result?timeout={timeout}")
    assert response.status_code == 400, response.content


def test_run_exists_is_409(api, engine):
    make_user("carol", perms=["runs.start_workflow"])
    engine.start("nap", {}, by="carol", run_id="taken-1")
    before = written()
    response = send(api, "/api/runs", json.dumps({"workflow": "nap", "run_id": "taken-1"}))
    assert response.status_code == 409, response.content
    assert response.json()["code"] == "run_exists"
    assert "differs" not in response.json()
    assert written() == before


def test_an_unexpected_failure_is_500_json_logged_with_its_traceback_and_writes_nothing(api, caplog):
    before = written()
    with caplog.at_level(logging.ERROR):
        response = send(api, "/api/runs", json.dumps({"workflow": "touchy", "input": {"word": "boom"}}))
    assert response.status_code == 500
    assert response.json() == {"error": "Something went wrong"}
    logged = [r for r in caplog.records if r.levelno >= logging.ERROR and r.exc_info]
    assert logged and "a validator that breaks" in str(logged[0].exc_info[1])
    assert written() == before
