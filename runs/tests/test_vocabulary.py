"""The runtime's typed vocabulary: error codes, ledger kinds, fault points, what `ctx` offers."""
from __future__ import annotations

import ast
from datetime import timedelta
from enum import StrEnum
from pathlib import Path

import pytest
from pydantic import BaseModel

from connectors import define_connector, op
from connectors.errors import (
    IssueCode,
    all_codes,
    code_domains,
    register_codes,
)
from connectors.operations import RESERVED_VENDOR_NAMES
from runs.config.workflows import define_workflow
from runs.engine import clock, faults
from runs.engine.advance import Advanced, advance
from runs.engine.context import RunContext
from runs.engine.faults import FaultPoint
from runs.errors import RunCode
from runs.models import LedgerKind, LedgerRecord, Run, Step
from runs.tests.fixtures import GET, SEND

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = ("connectors", "runs", "changes", "wakeups", "features", "sanoma_site")
# The calls that put a code on an error or an API answer.
CODE_TAKERS = {"SanomaError", "ApiError", "error_body"}


def _production_files() -> list[Path]:
    return [
        path for package in PRODUCTION for path in sorted((ROOT / package).rglob("*.py"))
        if "tests" not in path.relative_to(ROOT).parts and "migrations" not in path.parts
    ]


def _callee(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _codes_used() -> list[tuple[str, int, ast.expr | None]]:
    """Every `code=` given to an error or an API answer, and every class-level `code = ...`."""
    used = []
    for path in _production_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = str(path.relative_to(ROOT))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _callee(node) in CODE_TAKERS:
                given = next((k.value for k in node.keywords if k.arg == "code"), None)
                splat = any(k.arg is None for k in node.keywords)
                if given is not None or (_callee(node) == "SanomaError" and not splat):
                    used.append((where, node.lineno, given))
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if (isinstance(item, ast.Assign) and len(item.targets) == 1
                            and isinstance(item.targets[0], ast.Name) and item.targets[0].id == "code"):
                        used.append((where, item.lineno, item.value))
    return used


def _literal_codes_in(tree: ast.AST, where: str) -> list[str]:
    """Every code written as a plain string where a code is given: any `code=` or `issue_code=`, the code
    of an `input_issue(...)`, and the `"code"` of an issue written out as `{"path": ..., "code": ...}`."""
    found = []
    for node in ast.walk(tree):
        given: list[ast.expr] = []
        if isinstance(node, ast.Call):
            given += [k.value for k in node.keywords if k.arg in ("code", "issue_code")]
            if _callee(node) == "input_issue" and len(node.args) > 2:
                given.append(node.args[2])
        elif isinstance(node, ast.Dict):
            keys = [k.value if isinstance(k, ast.Constant) else None for k in node.keys]
            if "path" in keys and "code" in keys:
                given.append(node.values[keys.index("code")])
        for expr in given:
            for part in _code_values(expr):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    found.append(f"{where}:{part.lineno}: the literal code {part.value!r}")
    return found


def _code_values(expr: ast.expr) -> list[ast.expr]:
    """The expressions a code given as `expr` may be: both sides of `a if c else b` and `a or b`, and the
    default of `x.get(key, default)` or `getattr(x, name, default)` (never the key or the name)."""
    if isinstance(expr, ast.IfExp):
        return _code_values(expr.body) + _code_values(expr.orelse)
    if isinstance(expr, ast.BoolOp):
        return [value for part in expr.values for value in _code_values(part)]
    if isinstance(expr, ast.Call):
        default = {"get": 1, "getattr": 2}.get(_callee(expr))
        return _code_values(expr.args[default]) if default is not None and len(expr.args) > default else []
    return [expr]


def _literal_codes() -> list[str]:
    return [found for path in _production_files()
            for found in _literal_codes_in(ast.parse(path.read_text(encoding="utf-8")), str(path.relative_to(ROOT)))]


def _enums_by_name() -> dict[str, type[StrEnum]]:
    enums: list[type[StrEnum]] = [*code_domains(), IssueCode]
    return {enum.__name__: enum for enum in enums}


def test_every_error_the_runtime_raises_has_a_code_from_the_vocabulary():
    enums = _enums_by_name()
    problems = []
    for where, line, given in _codes_used():
        if given is None:
            problems.append(f"{where}:{line}: a SanomaError without a code")
        elif isinstance(given, ast.Constant) and isinstance(given.value, str):
            problems.append(f"{where}:{line}: code {given.value!r} is a literal, not a member of a code enum")
        elif isinstance(given, ast.Attribute) and isinstance(given.value, ast.Name) and given.value.id in enums:
            if given.attr not in enums[given.value.id].__members__:
                problems.append(f"{where}:{line}: {given.value.id}.{given.attr} does not exist")
    assert not problems, "\n".join(problems)


def test_no_code_is_written_as_a_literal_string():
    assert _literal_codes() == []


def test_the_literal_scan_sees_what_it_looks_for():
    planted = ast.parse(
        'raise SanomaError("x", code="run_ended")\n'
        'invalid_input("x", issue_code="required" if a else IssueCode.INVALID)\n'
        'input_issue([], "x", "too_long")\n'
        'd = {"path": [], "message": "x", "code": "type"}\n'
        'e = {"path": [], "code": getattr(item, "code", "invalid")}\n'
        'fine = SanomaError("x", code=record.get("code") or RunCode.RUN_ENDED, data={"vendor_code": "declined"})\n')
    assert _literal_codes_in(planted, "planted.py") == [
        "planted.py:1: the literal code 'run_ended'", "planted.py:2: the literal code 'required'",
        "planted.py:3: the literal code 'too_long'", "planted.py:4: the literal code 'type'",
        "planted.py:5: the literal code 'invalid'"]


def test_the_scan_finds_codes_at_all():
    # Guards the test above against passing because it looked at nothing.
    members = [g for _, _, g in _codes_used() if isinstance(g, ast.Attribute)]
    assert len(members) > 20


def test_a_code_two_domains_declare_is_refused():
    class Clash(StrEnum):
        RUN_ENDED = "run_ended"

    with pytest.raises(ValueError, match="'run_ended' is declared by RunCode and"):
        register_codes(Clash)
    assert all_codes()["run_ended"] is RunCode.RUN_ENDED


def test_every_code_the_api_answers_with_a_status_is_registered():
    from runs.api.base import STATUS_OF_CODE

    assert set(STATUS_OF_CODE) <= set(all_codes())


def test_ledger_kinds_are_the_records_the_engine_writes():
    assert LedgerKind.OP_CALLED == "op.called"
    field = LedgerRecord._meta.get_field("kind")
    assert field.choices is not None
    assert {value for value, _ in field.choices} == set(LedgerKind.values)


def test_arming_a_fault_point_the_engine_does_not_have_is_refused():
    with pytest.raises(ValueError, match="No fault point 'step.comit'; the engine has: step.commit, after_driver_call, "
                                         "before.op.intent, "):
        faults.arm("step.comit", RuntimeError("never"))
    faults.arm(FaultPoint.STEP_COMMIT, RuntimeError("armed"))
    with pytest.raises(RuntimeError, match="armed"):
        faults.point(FaultPoint.STEP_COMMIT)


def test_the_reserved_vendor_names_are_exactly_ctx_members_and_the_collections_vendor():
    public = {name for name in dir(RunContext) if not name.startswith("_")}
    assert public | {"data"} == set(RESERVED_VENDOR_NAMES)


def test_ctx_exposes_nothing_engine_only():
    for name in ("close", "next_seq", "signal_gen", "commit"):
        assert not hasattr(RunContext, name)


class Ref(BaseModel):
    id: str


@pytest.mark.parametrize("vendor", RESERVED_VENDOR_NAMES)
def test_a_vendor_named_like_a_ctx_member_is_refused_at_definition(vendor):
    with pytest.raises(ValueError, match=f"vendor '{vendor}' is taken by ctx.{vendor}"):
        define_connector(vendor, {"thing": {"get": op(effect="read", input=Ref, output=Ref)}})


def test_an_unknown_keyword_to_an_operation_call_fails_the_run_and_calls_nothing(engine_for):
    def body(ctx, i):
        return ctx.acme.order.get({"order_id": "1"}, timeout_s=5)

    engine = engine_for(define_workflow(name="kw", run=body, uses=[GET, SEND]))
    run_ = engine.run("kw")
    assert run_.status == "failed"
    assert run_.error["code"] == "invalid_input"
    assert "ctx.acme.order.get got an unknown keyword argument: timeout_s" in run_.error["message"]
    assert run_.error["data"]["issues"][0]["path"] == ["timeout_s"]
    assert engine.fake.calls == []
    assert not Step.objects.filter(run=run_).exists()


def test_a_run_whose_workflow_left_the_version_fails_with_a_code(engine_for):
    engine = engine_for(define_workflow(name="leaving", run=lambda ctx, i: "x", uses=[GET]))
    started = engine.start("leaving")
    del engine.config.workflows["leaving"]
    assert advance(started.id, worker_id="w", config=engine.config) is Advanced.FAILED
    failed = Run.objects.get(pk=started.id)
    assert failed.error is not None and failed.error["code"] == "workflow_not_found"


def test_a_workflow_returning_something_that_is_not_json_fails_with_a_code(engine_for):
    engine = engine_for(define_workflow(name="returns-a-set", run=lambda ctx, i: object(), uses=[GET]))
    run_ = engine.run("returns-a-set")
    assert run_.error["code"] == "bad_return_value"
    assert run_.error["data"] == {"type": "object"}


def test_a_replay_that_diverges_fails_with_a_code(engine_for):
    calls = iter(["get", "send"])

    def body(ctx, i):
        if next(calls) == "get":
            ctx.acme.order.get({"order_id": "1"})
        else:
            ctx.acme.mail.send({"to": "x"})
        ctx.sleep(seconds=1)
        return "done"

    engine = engine_for(define_workflow(name="diverges", run=body, uses=[GET, SEND, "sleep"]))
    started = engine.run("diverges")
    assert started.status == "waiting"
    clock.advance(timedelta(seconds=2))  # the sleep ends: the run replays, and calls something else first
    engine.drain()
    run_ = Run.objects.get(pk=started.id)
    assert run_.error is not None
    assert run_.error["code"] == "replay_diverged"
    assert run_.error["data"]["seq"] == 1


def test_each_kind_of_author_has_one_import():
    import connectors
    import runs.authoring
    import runs.policies

    # The front door's own list is held in runs/tests/test_front_door.py.
    assert {"define_workflow", "define_connector", "define_policy", "person"} <= set(runs.authoring.__all__)
    assert set(runs.policies.__all__) == {
        "ApprovalView", "Decision", "DecisionKind", "Policy", "PolicyCall", "RunInfo", "allow", "allow_all",
        "approve", "approved_for", "define_policy", "deny", "load_cedar_policy"}
    for module in (connectors, runs.authoring, runs.policies):
        for name in module.__all__:
            assert getattr(module, name) is not None, f"{module.__name__}.{name}"
    # A policy author never sees the engine's internals.
    assert not hasattr(runs.policies, "cedar_request") and not hasattr(runs.policies, "to_cedar_value")
