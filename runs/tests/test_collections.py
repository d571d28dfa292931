"""Collections through `ctx`: `ctx.data.<name>.get/list/put/delete` on the database driver (and the
same answers from the in-memory fake scenarios use), compare-and-set, idempotency keys, the policy
and the ledger, an app's collection, and the declarations resolution refuses."""
from __future__ import annotations

import sys
import textwrap
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, connections
from pydantic import BaseModel, Field

from company.sanoma_config import notes as company_notes
from connectors.drivers import CallContext
from connectors.errors import ConfigError, InvalidInput, SanomaError, error_code
from runs import selectors, services
from runs.authoring import define_collection, define_workflow
from runs.collections.definition import Collection, decode_cursor, encode_cursor
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig, SanomaConfig, load_config, resolve_config
from runs.engine.requests import parse_op_input
from runs.models import CollectionRecord, CollectionWrite, Run
from runs.policies import allow, define_policy, load_cedar_policy
from runs.testing import drain, make_user


class Note(BaseModel):
    order_id: str = Field(min_length=1)
    text: str
    stars: int = 0


notes = define_collection("notes", record=Note, key="order_id")


class Call(BaseModel):
    op: str
    input: dict[str, Any] = {}


class Script(BaseModel):
    calls: list[Call]


def run_script(ctx, input: Script):
    """Each call in turn: its output, or the code of its error."""
    results = []
    for call in input.calls:
        try:
            if call.op == "get":
                output = ctx.data.notes.get(call.input)
            elif call.op == "list":
                output = ctx.data.notes.list(call.input)
            elif call.op == "put":
                output = ctx.data.notes.put(call.input)
            else:
                output = ctx.data.notes.delete(call.input)
            results.append({"ok": output.model_dump(mode="json")})
        except SanomaError as err:
            results.append({"error": error_code(err), "data": getattr(err, "data", {})})
    return {"results": results}


script = define_workflow(name="script", input=Script, run=run_script,
                         uses=[notes.get, notes.list, notes.put, notes.delete])


class Paging(BaseModel):
    prefix: str = ""
    limit: int = 2


def page_all(ctx, input: Paging):
    pages, cursor, more = [], None, True
    while more:
        page = ctx.data.notes.list({"prefix": input.prefix, "limit": input.limit, "cursor": cursor})
        pages.append([entry.key for entry in page.records])
        cursor = page.cursor
        more = cursor is not None
    return {"pages": pages}


pager = define_workflow(name="pager", input=Paging, run=page_all, uses=["data.notes.list"])


def put_only(ctx, input: Note):
    return ctx.data.notes.put({"record": input.model_dump()}).model_dump(mode="json")


putter = define_workflow(name="putter", input=Note, run=put_only, uses=[notes.put])


def reads_without_uses(ctx, input):
    return ctx.data.notes.get({"key": "1"}).model_dump()


unlisted = define_workflow(name="unlisted", uses=[notes.put], run=reads_without_uses)

WORKFLOWS = [script, pager, putter]


def resolved(*, fakes: str = "", policy: Any = None, collections: list[Collection] | None = None) -> ResolvedConfig:
    config = resolve_config(SanomaConfig(connectors=[], workflows=WORKFLOWS, collections=collections or [notes],
                                         policy=policy), fakes=fakes)
    set_config(config)
    return config


def run(config: ResolvedConfig, workflow: str, input: Any) -> Run:
    started = services.start(workflow=workflow, input=input, started_by="alice", config=config)
    drain(config)
    started.refresh_from_db()
    return started


def results(config: ResolvedConfig, *calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    done = run(config, "script", {"calls": [{"op": op, "input": i} for op, i in calls]})
    assert done.status == "finished", done.error
    assert done.result is not None
    found: list[dict[str, Any]] = done.result["results"]
    return found


def put(order_id: str, text: str = "note", **more: Any) -> tuple[str, dict[str, Any]]:
    if_version = more.pop("if_version", None)
    body: dict[str, Any] = {"record": {"order_id": order_id, "text": text, **more}}
    if if_version is not None:
        body["if_version"] = if_version
    return ("put", body)


def stored() -> dict[str, tuple[dict[str, Any], int]]:
    return {row.key: (row.record, row.version) for row in CollectionRecord.objects.filter(collection="notes")}


@pytest.fixture
def alice(db):
    return make_user("alice", perms=["runs.start_workflow"])


@pytest.fixture(params=["database", "fake"])
def either(request, alice):
    """The same calls on the database driver and on the fake scenarios use: the same answers."""
    return resolved(fakes="instance" if request.param == "fake" else "")


@pytest.fixture
def database(alice):
    config = resolved()
    assert "data" not in config.fakes
    return config


# ---- the four operations ---------------------------------------------------------------------


def test_put_get_and_delete_through_ctx(either):
    got = results(
        either,
        put("1001", "first"),
        ("get", {"key": "1001"}),
        put("1001", "second", stars=5),
        ("get", {"key": "1001"}),
        ("get", {"key": "2002"}),
        ("delete", {"key": "1001"}),
        ("delete", {"key": "1001"}),
        ("get", {"key": "1001"}),
    )
    assert got[0] == {"ok": {"key": "1001", "record": {"order_id": "1001", "text": "first", "stars": 0},
                             "version": 1}}
    assert got[1] == got[0]
    assert got[2]["ok"]["version"] == 2 and got[3]["ok"]["record"] == {"order_id": "1001", "text": "second",
                                                                        "stars": 5}
    assert got[4] == {"error": "not_found", "data": {"collection": "notes", "key": "2002"}}
    assert got[5] == {"ok": {"key": "1001", "deleted": True}}
    assert got[6] == {"ok": {"key": "1001", "deleted": False}}
    assert got[7]["error"] == "not_found"


def test_list_is_in_code_point_order_with_a_prefix_and_cursor_paging(either):
    keys = ["b2", "a10", "B1", "a2", "a1", "ä1", "c"]
    results(either, *[put(k) for k in keys])
    everything = run(either, "pager", {"limit": 2})
    assert everything.result == {"pages": [["B1", "a1"], ["a10", "a2"], ["b2", "c"], ["ä1"]]}
    only_a = run(either, "pager", {"prefix": "a", "limit": 2})
    assert only_a.result == {"pages": [["a1", "a10"], ["a2"]]}
    one_page = run(either, "pager", {"prefix": "a", "limit": 500})
    assert one_page.result == {"pages": [["a1", "a10", "a2"]]}
    none = run(either, "pager", {"prefix": "zz", "limit": 2})
    assert none.result == {"pages": [[]]}


def test_list_answers_records_with_their_versions_and_default_limit(either):
    got = results(either, *[put(f"k{i:03}") for i in range(55)], put("k000", "again"), ("list", {}))
    page = got[-1]["ok"]
    assert len(page["records"]) == 50 and page["cursor"] is not None
    assert page["records"][0] == {"key": "k000", "record": {"order_id": "k000", "text": "again", "stars": 0},
                                  "version": 2}
    assert decode_cursor(page["cursor"]) == "k049"


def test_bad_list_input_is_invalid_input_naming_the_field(either):
    for body, field in (({"limit": 501}, "limit"), ({"limit": 0}, "limit"), ({"cursor": "not-a-cursor"}, "cursor"),
                        ({"cursor": encode_cursor("a")[:-2] + "!!"}, "cursor"), ({"sort": "key"}, "sort")):
        got = results(either, ("list", body))
        assert got[0]["error"] == "invalid_input", body
        assert [i["path"] for i in got[0]["data"]["issues"]] == [[field]], body


def test_a_bad_record_is_invalid_input_naming_the_field_and_nothing_is_called(either):
    got = results(either, ("put", {"record": {"order_id": "1", "stars": "many"}}),
                  ("put", {"record": {"order_id": "", "text": "x"}}),
                  ("put", {"record": {"order_id": "k" * 201, "text": "x"}}),
                  ("put", {"record": {"order_id": "1", "text": "x"}, "if_version": -1}),
                  ("put", {"record": {"order_id": "1", "text": "x"}, "extra": True}))
    paths = [[tuple(i["path"]) for i in g["data"]["issues"]] for g in got]
    assert all(g["error"] == "invalid_input" for g in got), got
    assert paths[0] == [("record", "text"), ("record", "stars")]
    assert paths[1] == [("record", "order_id")]
    assert paths[2] == [("record",)] and "at most 200" in got[2]["data"]["issues"][0]["message"]
    assert paths[3] == [("if_version",)]
    assert paths[4] == [("extra",)]
    assert stored() == {} and not CollectionWrite.objects.exists()
    if "data" in either.fakes:
        assert either.fakes["data"].calls == []


def test_a_record_the_database_could_not_hold_is_refused_before_the_call():
    # A run's input cannot carry a NUL, but a workflow can build one: the put's own check refuses it.
    with pytest.raises(InvalidInput) as refused:
        parse_op_input(notes.put, {"record": {"order_id": "1", "text": "nul \x00 here"}})
    assert refused.value.data["issues"][0]["path"] == ["record"]
    assert "text: contains a NUL character" in refused.value.data["issues"][0]["message"]
    with pytest.raises(InvalidInput, match="order_id"):
        parse_op_input(notes.put, {"record": {"order_id": "a\x00b", "text": "x"}})
    for op in (notes.get, notes.delete):
        with pytest.raises(InvalidInput) as bad_key:
            parse_op_input(op, {"key": "a\x00b"})
        assert bad_key.value.data["issues"][0]["path"] == ["key"]
        assert "the key contains a NUL character" in bad_key.value.data["issues"][0]["message"]


def test_a_collection_call_its_uses_do_not_list_is_refused_with_the_config():
    with pytest.raises(ConfigError) as refused:
        resolve_config(SanomaConfig(connectors=[], workflows=[unlisted], collections=[notes]))
    line = reads_without_uses.__code__.co_firstlineno + 1
    assert (f'Workflow "unlisted" calls ctx.data.notes.get at {__file__}:{line}:12, which its `uses` does not '
            "list: add data.notes.get to uses") in str(refused.value)


# ---- compare-and-set ---------------------------------------------------------------------------


def test_a_put_with_a_stale_if_version_is_a_conflict_and_changes_nothing(database):
    got = results(database, put("1001", "first"), put("1001", "second", if_version=1),
                  put("1001", "stale", if_version=1), put("1001", "never was", if_version=0),
                  put("1001", "future", if_version=7))
    assert got[1]["ok"]["version"] == 2
    assert [g["error"] for g in got[2:]] == ["conflict", "conflict", "conflict"]
    assert got[2]["data"] == {"collection": "notes", "key": "1001", "if_version": 1, "version": 2}
    assert stored() == {"1001": ({"order_id": "1001", "text": "second", "stars": 0}, 2)}
    assert CollectionWrite.objects.count() == 2  # the two puts that wrote; a conflict keeps nothing
    run_id = Run.objects.get(workflow="script").id
    called = [r for r in selectors.ledger_of(run_id=run_id) if r["type"] == "op.called"]
    assert [c.get("error", {}).get("code") for c in called] == [None, None, "conflict", "conflict", "conflict"]
    assert called[2]["error"]["message"] == (
        "notes/1001 has version 2, not version 1 (if_version=1): nothing was changed")


def test_if_version_zero_means_there_must_be_no_record_yet(database):
    got = results(database, put("new", "one", if_version=0), put("new", "two", if_version=0))
    assert got[0]["ok"]["version"] == 1
    assert got[1]["error"] == "conflict"
    assert stored()["new"] == ({"order_id": "new", "text": "one", "stars": 0}, 1)


def test_a_delete_with_a_stale_if_version_is_a_conflict_and_deletes_nothing(database):
    got = results(database, put("1"), put("1", "again"), ("delete", {"key": "1", "if_version": 1}),
                  ("delete", {"key": "1", "if_version": 2}), ("delete", {"key": "2", "if_version": 0}))
    assert got[2]["error"] == "conflict"
    assert got[3] == {"ok": {"key": "1", "deleted": True}}
    assert got[4] == {"ok": {"key": "2", "deleted": False}}
    assert stored() == {}


def test_the_fake_conflicts_the_same_way(alice):
    config = resolved(fakes="instance")
    got = results(config, put("1001", "first"), put("1001", "stale", if_version=0))
    assert got[1]["error"] == "conflict"
    assert config.fakes["data"].state == {
        "notes": {"1001": {"record": {"order_id": "1001", "text": "first", "stars": 0}, "version": 1}}}


# ---- idempotency keys --------------------------------------------------------------------------


def _context(key: str, op: str) -> CallContext:
    return CallContext(idempotency_key=key, run_id="r-1", op_id=op)


def test_a_put_retried_with_the_same_idempotency_key_returns_the_first_reply_and_changes_nothing(database):
    driver, op = database.drivers[notes.put.id], notes.put
    first = driver.call(op.id, op.input.model_validate({"record": {"order_id": "1", "text": "first"}}),
                        _context("r-1:1", op.id))
    again = driver.call(op.id, op.input.model_validate({"record": {"order_id": "1", "text": "different"}}),
                        _context("r-1:1", op.id))
    assert again == first == {"key": "1", "record": {"order_id": "1", "text": "first", "stars": 0}, "version": 1}
    assert stored() == {"1": ({"order_id": "1", "text": "first", "stars": 0}, 1)}
    row = CollectionRecord.objects.get(collection="notes", key="1")
    assert row.updated_by_run == "r-1"
    assert list(CollectionWrite.objects.values_list("idempotency_key", "key")) == [("r-1:1", "1")]
    other = driver.call(op.id, op.input.model_validate({"record": {"order_id": "1", "text": "second"}}),
                        _context("r-1:2", op.id))
    assert other["version"] == 2


@pytest.mark.parametrize("if_version", [0, 1])
def test_a_compare_and_set_retried_with_the_same_key_returns_the_first_reply(database, if_version):
    driver, op = database.drivers[notes.put.id], notes.put
    if if_version:
        driver.call(op.id, op.input.model_validate({"record": {"order_id": "1", "text": "v1"}}),
                    _context("r-1:1", op.id))
    parsed = op.input.model_validate({"record": {"order_id": "1", "text": "cas"}, "if_version": if_version})
    first = driver.call(op.id, parsed, _context("r-1:2", op.id))
    again = driver.call(op.id, parsed, _context("r-1:2", op.id))  # the stored version moved on: still the reply
    assert again == first and first["version"] == if_version + 1
    assert stored() == {"1": ({"order_id": "1", "text": "cas", "stars": 0}, if_version + 1)}
    with pytest.raises(SanomaError) as stale:
        driver.call(op.id, parsed, _context("r-1:3", op.id))
    assert error_code(stale.value) == "conflict"
    assert stale.value.data == {"collection": "notes", "key": "1", "if_version": if_version,
                                "version": if_version + 1}


@pytest.mark.django_db(transaction=True)
def test_racing_compare_and_sets_let_exactly_one_writer_through(alice):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite takes one writer at a time: there is no race to lose")
    config = resolved()
    driver, op = config.drivers[notes.put.id], notes.put
    outcomes: list[str] = []
    lock = threading.Lock()

    def write(n: int, expected: int) -> None:
        parsed = op.input.model_validate({"record": {"order_id": "hot", "text": f"w{n}"}, "if_version": expected})
        try:
            driver.call(op.id, parsed, _context(f"race:{expected}:{n}", op.id))
            outcome = "ok"
        except SanomaError as err:
            outcome = str(error_code(err))
        finally:
            connections.close_all()
        with lock:
            outcomes.append(outcome)

    for expected in (0, 1, 2):
        outcomes.clear()
        threads = [threading.Thread(target=write, args=(n, expected)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes) == ["conflict"] * 5 + ["ok"], expected
        assert CollectionRecord.objects.get(collection="notes", key="hot").version == expected + 1
    assert CollectionWrite.objects.filter(key="hot").count() == 3


def test_a_delete_retried_with_the_same_key_returns_the_first_reply(database):
    put_driver, delete_driver = database.drivers[notes.put.id], database.drivers[notes.delete.id]
    put_driver.call(notes.put.id, notes.put.input.model_validate({"record": {"order_id": "1", "text": "x"}}),
                    _context("r-1:1", notes.put.id))
    parsed = notes.delete.input.model_validate({"key": "1"})
    first = delete_driver.call(notes.delete.id, parsed, _context("r-1:2", notes.delete.id))
    put_driver.call(notes.put.id, notes.put.input.model_validate({"record": {"order_id": "1", "text": "back"}}),
                    _context("r-1:3", notes.put.id))
    again = delete_driver.call(notes.delete.id, parsed, _context("r-1:2", notes.delete.id))
    assert first == again == {"key": "1", "deleted": True}
    assert stored() == {"1": ({"order_id": "1", "text": "back", "stars": 0}, 1)}


# ---- the policy and the ledger ----------------------------------------------------------------


def test_a_write_the_policy_denies_is_in_the_ledger_as_denied_and_nothing_is_stored(alice, tmp_path):
    (tmp_path / "data.cedar").write_text(textwrap.dedent('''
        @id("notes-open")
        permit(principal, action, resource);

        @id("vip-notes-by-hand")
        @reason("VIP notes are written by hand")
        forbid(principal, action == Action::"data.notes.put", resource == Target::"notes/vip");
    '''))
    config = resolved(policy=load_cedar_policy(tmp_path))
    denied = run(config, "putter", {"order_id": "vip", "text": "hello"})
    assert denied.status == "failed" and denied.error is not None
    assert denied.error["code"] == "policy_denied"
    assert stored() == {} and not CollectionWrite.objects.exists()
    called = [r for r in selectors.ledger_of(run_id=denied.id) if r["type"] == "op.called"]
    assert len(called) == 1
    body = called[0]
    assert body["op"] == "data.notes.put" and body["effect"] == "write"
    assert body["decision"]["kind"] == "deny" and body["decision"]["reason"].endswith("VIP notes are written by hand")
    assert body["error"]["code"] == "policy_denied" and "output" not in body
    allowed = run(config, "putter", {"order_id": "regular", "text": "hello"})
    assert allowed.status == "finished"
    assert stored() == {"regular": ({"order_id": "regular", "text": "hello", "stars": 0}, 1)}
    record = [r for r in selectors.ledger_of(run_id=allowed.id) if r["type"] == "op.called"][0]
    assert record["decision"]["kind"] == "allow"
    assert record["output"] == {"key": "regular", "record": {"order_id": "regular", "text": "hello", "stars": 0},
                                "version": 1}


def test_the_policy_sees_the_collection_and_key_as_the_target(alice):
    seen: list[tuple[str, str | None, str]] = []

    def watch(call):
        seen.append((call.op_id, call.target, call.effect))
        return allow()

    config = resolved(policy=define_policy(watch, version="t"))
    results(config, put("1001"), ("get", {"key": "1001"}), ("list", {"prefix": "1"}), ("delete", {"key": "1001"}))
    assert seen == [("data.notes.put", "notes/1001", "write"), ("data.notes.get", "notes/1001", "read"),
                    ("data.notes.list", None, "read"), ("data.notes.delete", "notes/1001", "write")]


# ---- an app's collection ----------------------------------------------------------------------


APP_COLLECTIONS = '''
from pydantic import BaseModel

from runs.authoring import define_collection


class Ticket(BaseModel):
    number: int
    title: str


tickets = define_collection("tickets", record=Ticket, key="number")
'''

APP_WORKFLOW = '''
from {package}.apps.support.collections import tickets
from runs.authoring import define_workflow


def run(ctx, input):
    ctx.data.support.tickets.put({{"record": {{"number": 7, "title": "printer"}}}})
    got = ctx.data.support.tickets.get({{"key": "7"}})
    page = ctx.data.support.tickets.list({{}})
    return {{"title": got.record.title, "keys": [e.key for e in page.records]}}


triage = define_workflow(name="triage", run=run, uses=[tickets.put, tickets.get, "data.support.tickets.list"])
'''


def _app_root(tmp_path: Path, config_text: str = "config = SanomaConfig(connectors=[])\n") -> Path:
    package = f"collroot_{uuid.uuid4().hex[:8]}"
    root = tmp_path / package
    (root / "apps" / "support" / "workflows").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "sanoma_config.py").write_text("from runs.authoring import SanomaConfig, define_collection\n"
                                           + config_text)
    (root / "apps" / "support" / "collections.py").write_text(APP_COLLECTIONS)
    (root / "apps" / "support" / "workflows" / "triage.py").write_text(APP_WORKFLOW.format(package=package))
    return root


@pytest.fixture
def app_root(tmp_path):
    made: list[str] = []

    def build(config_text: str = "config = SanomaConfig(connectors=[])\n") -> Path:
        root = _app_root(tmp_path, config_text)
        made.append(root.name)
        return root

    yield build
    for name in list(sys.modules):
        if any(name == p or name.startswith(p + ".") for p in made):
            del sys.modules[name]


def test_an_apps_collection_is_found_and_called_as_ctx_data_app_name(alice, app_root):
    config = load_config(app_root())
    set_config(config)
    assert list(config.collections) == ["support.tickets"]
    tickets = config.collections["support.tickets"]
    assert tickets.app == "support" and tickets.local_name == "tickets"
    assert sorted(op for op in config.ops if op.startswith("data.")) == [
        "data.support.tickets.delete", "data.support.tickets.get", "data.support.tickets.list",
        "data.support.tickets.put"]
    done = run(config, "support.triage", {})
    assert done.status == "finished", done.error
    assert done.result == {"title": "printer", "keys": ["7"]}
    row = CollectionRecord.objects.get()
    assert (row.collection, row.key, row.record, row.version) == ("support.tickets", "7",
                                                                 {"number": 7, "title": "printer"}, 1)
    ops = [r["op"] for r in selectors.ledger_of(run_id=done.id) if r["type"] == "op.called"]
    assert ops == ["data.support.tickets.put", "data.support.tickets.get", "data.support.tickets.list"]


def test_a_root_collection_named_like_an_app_with_collections_is_refused(alice, app_root):
    root = app_root("class S(BaseModel):\n    id: str\n\n\nsupport = define_collection('support', record=S, key='id')\n"
                    "config = SanomaConfig(connectors=[], collections=[support])\n")
    (root / "sanoma_config.py").write_text("from pydantic import BaseModel\n" + (root / "sanoma_config.py").read_text())
    with pytest.raises(ConfigError) as refused:
        load_config(root)
    assert refused.value.problems == [
        'Collection "support" is named like the app support, which has collections (ctx.data.support would be '
        "both): rename one"]
    assert refused.value.problems[0].file == "sanoma_config.py"


# ---- declarations that are refused ------------------------------------------------------------


class NotAModel:
    order_id: str


@pytest.mark.parametrize(("name", "record", "key", "says"), [
    ("customer-notes", Note, "order_id", "'customer-notes' is not a collection name: use lowercase letters, digits "
                                          "and underscores"),
    ("Notes", Note, "order_id", "'Notes' is not a collection name"),
    ("", Note, "order_id", "'' is not a collection name"),
    ("notes", NotAModel, "order_id", "define_collection('notes'): record must be a pydantic model class"),
    ("notes", {"order_id": str}, "order_id", "record must be a pydantic model class"),
    ("notes", Note, "id", "define_collection('notes'): key 'id' is not a field of Note; its fields are order_id, "
                          "text, stars"),
    ("notes", Note, None, "key None is not a field of Note"),
])
def test_a_bad_declaration_is_a_config_problem_naming_what_is_wrong(name, record, key, says):
    with pytest.raises(ConfigError) as refused:
        define_collection(name, record=record, key=key)
    problem = refused.value.problems[0]
    assert says in problem
    assert problem.file == __file__ and problem.line is not None


def test_a_key_field_must_be_text_or_a_whole_number():
    class Odd(BaseModel):
        ref: float
        tags: list[str]

    for key, shown in (("ref", "float"), ("tags", "list[str]")):
        with pytest.raises(ConfigError) as refused:
            define_collection("odd", record=Odd, key=key)
        assert f"the key field Odd.{key} is {shown}; a key field is str or int" in str(refused.value)


def test_the_config_refuses_two_collections_with_one_name_and_what_is_not_a_collection():
    other = define_collection("notes", record=Note, key="text")
    with pytest.raises(ConfigError) as refused:
        resolve_config(SanomaConfig(connectors=[], collections=[notes, other, "notes"]))  # type: ignore[list-item]
    first, second = refused.value.problems
    assert first.startswith('Two collections are named "notes" (')
    assert first.endswith("): a name can be declared once")
    assert second == "collections lists 'notes', which is not a define_collection result"
    resolve_config(SanomaConfig(connectors=[], collections=[notes, notes]))  # one collection listed twice is one
    with pytest.raises(ConfigError) as not_a_list:
        resolve_config(SanomaConfig(connectors=[], collections=notes))  # type: ignore[arg-type]
    assert not_a_list.value.problems == [
        "The config's `collections`, when given, is a list of define_collection results"]


def test_a_workflow_using_an_undeclared_collection_is_refused():
    wf = define_workflow(name="lost", uses=["data.letters.put"], run=lambda ctx, i: None)
    with pytest.raises(ConfigError, match="uses data.letters.put, which no connector in the config declares"):
        resolve_config(SanomaConfig(connectors=[], workflows=[wf], collections=[notes]))


def test_a_bad_declaration_in_sanoma_config_names_its_file_and_line(tmp_path):
    package = f"collbad_{uuid.uuid4().hex[:8]}"
    root = tmp_path / package
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "sanoma_config.py").write_text(
        "from pydantic import BaseModel\nfrom runs.authoring import SanomaConfig, define_collection\n\n\n"
        "class N(BaseModel):\n    id: str\n\n\nnotes = define_collection('notes', record=N, key='nope')\n"
        "config = SanomaConfig(connectors=[], collections=[notes])\n")
    try:
        with pytest.raises(ConfigError) as refused:
            load_config(root)
    finally:
        for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
            del sys.modules[name]
    problem = refused.value.problems[0]
    assert problem == "define_collection('notes'): key 'nope' is not a field of N; its fields are id"
    assert (Path(problem.file or "").resolve(), problem.line) == ((root / "sanoma_config.py").resolve(), 9)


def test_the_example_company_keeps_notes():
    assert company_notes.name == "notes" and company_notes.key == "order_id"
    assert company_notes.put.id == "data.notes.put"
