"""The workflow outline: the nodes read from a workflow's file, the contract, call sites, JSON.

Pure: no database. Sources are written out here and read with `ast`; the call-site tests run
workflow files from a temporary folder against a stand-in ctx that asks the outline about each call.
"""
from __future__ import annotations

import importlib.util
import sys
import textwrap
from dataclasses import replace
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

import pytest

from company.apps.support.workflows.onboard_agent import onboard_agent
from company.apps.support.workflows.onboard_team import onboard_team
from company.workflows.await_shipment import await_shipment
from company.workflows.follow_up import follow_up
from company.workflows.refund import refund
from company.workflows.refunds_report import refunds_report
from company.workflows.reprice import reprice
from connectors.errors import Problem
from runs.config.outline import (
    Node,
    Outline,
    call_in_outline,
    check_call,
    config_problems,
    node_as_json,
    outline_as_json,
    outline_of,
    outline_of_source,
    outline_problems,
    outlines_in_source,
    site_of,
)
from runs.config.workflows import define_workflow

COMPANY = [refund, reprice, await_shipment, follow_up, refunds_report, onboard_agent, onboard_team]


def outline(source: str) -> Outline:
    return outline_of_source(textwrap.dedent(source).lstrip("\n"), "run", "wf.py")


def shape(nodes: tuple[Node, ...] | list[Node]) -> list[Any]:
    """A node list as compact data: a leaf is (kind, its first field); a node with sections is
    (kind, [(section label, ends, shape of its nodes), ...]); a helper (kind, its function, [its body])."""
    out: list[Any] = []
    for node in nodes:
        if node.kind == "helper":
            out.append((node.kind, node.info["function"], [(s.label, s.ends, shape(s.nodes)) for s in node.sections]))
        elif node.sections:
            out.append((node.kind, [(s.label, s.ends, shape(s.nodes)) for s in node.sections]))
        else:
            value = next(iter(node.info.values()), None)
            out.append((node.kind, value) if node.info else (node.kind,))
    return out


def spans(nodes: tuple[Node, ...]) -> list[tuple[int, int, int, int]]:
    return [(n.span.line, n.span.column, n.span.end_line, n.span.end_column) for n in nodes]


def problems(source: str) -> list[tuple[int, int, str]]:
    return [(p.line, p.column, p.message) for p in outline(source).problems]


def assert_problem(source: str, line: int, column: int, *words: str) -> None:
    found = problems(source)
    assert len(found) == 1, found
    assert found[0][:2] == (line, column), found
    for word in words:
        assert word in found[0][2], found


# ---- nodes ------------------------------------------------------------------------------------

def test_operations_and_collections_are_op_nodes_with_exact_spans() -> None:
    drawn = outline("""
        def run(ctx, input):
            order = ctx.shop.order.get({"order_id": input.order_id})
            note = "€😀"; ctx.data.notes.put({"record": {}})
            ctx.data.crm.notes.get(
                {"key": note})
            return order
    """)
    assert drawn.problems == ()
    assert shape(drawn.nodes) == [("op", "shop.order.get"), ("op", "data.notes.put"), ("op", "data.crm.notes.get")]
    # Columns are 1-based UTF-16 units: "€" is one unit, "😀" two; an end is just past the last character.
    assert spans(drawn.nodes) == [(2, 13, 2, 61), (3, 19, 3, 53), (4, 5, 5, 23)]
    assert [n.path for n in drawn.nodes] == ["0", "1", "2"]
    assert drawn.span is not None and (drawn.span.line, drawn.span.end_line) == (1, 6)


def test_builtins_are_drawn_with_their_literal_titles_topics_and_workflows() -> None:
    drawn = outline("""
        def run(ctx, input):
            ctx.approval("Refund a big order", approver="group:finance")
            ctx.approval(f"Onboard {input.name}", approver="lead")
            ctx.approval(title="By keyword", approver="lead")
            ctx.sleep(days=3)
            shipped = ctx.wait_message("shipped", timeout=60)
            ctx.wait_message(topic=input.topic)
            child = ctx.start_run("support.onboard-agent", {"username": "ada"})
            ctx.start_run(input.workflow)
            ctx.wait_run(child)
            ctx.tag(order=input.order_id)
            return {"at": ctx.now().isoformat(), "run": ctx.run_id, "tail": ctx.run_id.split(".")[-1]}
    """)
    assert drawn.problems == ()
    assert shape(drawn.nodes) == [
        ("approval", "Refund a big order"), ("approval", None), ("approval", "By keyword"), ("sleep",),
        ("message", "shipped"), ("message", None), ("child", "start"), ("child", "start"), ("child", "wait"),
    ]
    assert [n.info.get("workflow") for n in drawn.nodes if n.kind == "child"] == ["support.onboard-agent", None, None]
    assert spans(drawn.nodes)[3] == (5, 5, 5, 22)
    # now() and tag() draw nothing but are call sites all the same.
    assert sorted((s.call, s.node) for s in drawn.sites if s.node is None) == [("now", None), ("tag", None)]


def test_nodes_follow_evaluation_order_and_code_without_calls_is_left_out() -> None:
    drawn = outline("""
        def run(ctx, input):
            total = sum(i.cents for i in input.items)
            if total > 10:
                total -= 1
            for item in input.items:
                print(item)
            try:
                value = int(input.code)
            except ValueError:
                value = 0
            ctx.shop.customer.notify({"customer": ctx.shop.order.get({"id": value}).customer, "n": total})
    """)
    assert shape(drawn.nodes) == [("op", "shop.order.get"), ("op", "shop.customer.notify")]
    assert [n.span.line for n in drawn.nodes] == [11, 11]


def test_all_draws_a_branch_per_member_lambda_or_function_defined_in_run() -> None:
    drawn = outline("""
        def run(ctx, input):
            def tell_team():
                ctx.team.chat.post({"text": "refunded"})
                return ctx.now()

            done = ctx.all([
                lambda: ctx.shop.customer.notify({"to": input.customer}),
                tell_team,
                lambda: ctx.approval("Check", approver="lead") and ctx.shop.order.close({}),
            ])
            ctx.all([])
            return done
    """)
    assert drawn.problems == ()
    assert shape(drawn.nodes) == [
        ("all", [
            ("", None, [("op", "shop.customer.notify")]),
            ("tell_team", None, [("op", "team.chat.post")]),
            ("", None, [("approval", "Check"),
                        ("branch", [('if ctx.approval("Check", approver="lead")', None, [("op", "shop.order.close")]),
                                    ("", None, [])])]),
        ]),
        ("all", None),  # an empty ctx.all is still a call: drawn, with no branches
    ]
    first = drawn.nodes[0]
    assert first.info == {"label": None}
    assert spans(drawn.nodes) == [(6, 12, 10, 7), (11, 5, 11, 16)]
    assert [s.path for s in first.sections] == ["0.0", "0.1", "0.2"]
    assert first.sections[1].nodes[0].path == "0.1.0"
    assert first.sections[1].nodes[0].span.line == 3  # drawn where ctx.all lists it, spanned where it is written


def test_all_over_a_comprehension_draws_one_branch_per_element() -> None:
    drawn = outline("""
        def run(ctx, input):
            ctx.all([(lambda p=p: ctx.shop.product.price({"sku": p.sku})) for p in input.prices if p.sku])
    """)
    assert shape(drawn.nodes) == [("all", [("", None, [("op", "shop.product.price")])])]
    assert drawn.nodes[0].info == {"label": "for p in input.prices if p.sku"}
    assert drawn.nodes[0].sections[0].nodes[0].path == "0.0.0"


def test_for_loops_and_comprehensions_are_each_while_loops_repeat() -> None:
    drawn = outline("""
        def run(ctx, input):
            for order in ctx.shop.order.list({}).orders:
                ctx.shop.order.close({"id": order.id})
            else:
                ctx.sleep(seconds=1)
            started = [ctx.start_run("child", {"n": n}) for n in input.numbers]
            pairs = {k: ctx.kv.item.get({"k": k}) for k in input.keys if k}
            nested = [ctx.a.b.c({"x": x, "y": y}) for x in input.xs for y in ctx.a.b.list({"x": x}).ys]
            done = False
            while not ctx.shop.order.get({"id": input.id}).done:
                ctx.sleep(minutes=5)
            return started, pairs, nested, done
    """)
    assert drawn.problems == ()
    assert shape(drawn.nodes) == [
        ("op", "shop.order.list"),
        ("each", [("", None, [("op", "shop.order.close")])]),
        ("sleep",),
        ("each", [("", None, [("child", "start")])]),
        ("each", [("", None, [("branch", [("if k", None, [("op", "kv.item.get")]), ("", None, [])])])]),
        ("each", [("", None, [("op", "a.b.list"), ("each", [("", None, [("op", "a.b.c")])])])]),
        ("repeat", [("", None, [("op", "shop.order.get"), ("sleep",)])]),
    ]
    labels = [n.info["label"] for n in drawn.nodes if n.kind in ("each", "repeat")]
    assert labels == ["for order in ctx.shop.order.list({}).orders", "for n in input.numbers", "for k in input.keys",
                      "for x in input.xs", "while not ctx.shop.order.get({\"id\": input.id}).done"]
    assert spans(drawn.nodes)[1] == (2, 5, 5, 29)
    assert spans(drawn.nodes)[3] == (6, 15, 6, 72)


def test_if_elif_else_is_one_branch_with_a_case_per_arm_that_calls_and_the_way_past() -> None:
    drawn = outline("""
        def run(ctx, input):
            if input.amount > 1000:
                ctx.approval("Big", approver="finance")
            elif input.amount > 100:
                ctx.approval("Medium", approver="lead")
            elif input.amount > 10:
                note = "small"
            else:
                ctx.shop.order.flag({})
            if input.a:
                ctx.x.y.one({})
            else:
                ctx.x.y.two({})
            if input.b:
                ctx.x.y.three({})
    """)
    assert drawn.problems == ()
    assert shape(drawn.nodes) == [
        ("branch", [("if input.amount > 1000", None, [("approval", "Big")]),
                    ("elif input.amount > 100", None, [("approval", "Medium")]),
                    ("else", None, [("op", "shop.order.flag")]),
                    ("", None, [])]),  # the small arm calls nothing: a way past
        ("branch", [("if input.a", None, [("op", "x.y.one")]), ("else", None, [("op", "x.y.two")])]),
        ("branch", [("if input.b", None, [("op", "x.y.three")]), ("", None, [])]),
    ]
    assert [s.role for s in drawn.nodes[0].sections] == ["case", "case", "case", "past"]
    assert spans(drawn.nodes)[1] == (10, 5, 13, 24)


def test_an_elif_whose_test_calls_ctx_is_drawn_inside_the_else() -> None:
    drawn = outline("""
        def run(ctx, input):
            if input.skip:
                ctx.x.y.skipped({})
            elif ctx.x.y.check({}).ok:
                ctx.x.y.go({})
    """)
    assert shape(drawn.nodes) == [
        ("branch", [("if input.skip", None, [("op", "x.y.skipped")]),
                    ("else", None, [("op", "x.y.check"),
                                    ("branch", [("if ctx.x.y.check({}).ok", None, [("op", "x.y.go")]),
                                                ("", None, [])])])]),
    ]


def test_match_conditional_expressions_and_boolean_operators_branch() -> None:
    drawn = outline("""
        def run(ctx, input):
            match input.kind:
                case "refund":
                    ctx.shop.order.refund({})
                case "note" if input.text:
                    pass
                case _:
                    ctx.shop.order.get({})
            reply = ctx.a.b.yes({}) if input.ok else None
            found = input.cached or ctx.a.b.read({})
            return reply, found
    """)
    assert drawn.problems == ()
    assert shape(drawn.nodes) == [
        ("branch", [('case "refund"', None, [("op", "shop.order.refund")]),
                    ("case _", None, [("op", "shop.order.get")]),
                    ("", None, [])]),
        ("branch", [("if input.ok", None, [("op", "a.b.yes")]), ("", None, [])]),
        ("branch", [("if not (input.cached)", None, [("op", "a.b.read")]), ("", None, [])]),
    ]
    assert spans(drawn.nodes)[1] == (9, 13, 9, 50)


def test_a_match_whose_every_case_calls_has_no_way_past() -> None:
    drawn = outline("""
        def run(ctx, input):
            match input.kind:
                case "a":
                    ctx.x.y.a({})
                case _:
                    ctx.x.y.b({})
    """)
    assert shape(drawn.nodes) == [
        ("branch", [('case "a"', None, [("op", "x.y.a")]), ("case _", None, [("op", "x.y.b")])])]


def test_try_draws_its_body_handlers_and_else() -> None:
    drawn = outline("""
        def run(ctx, input):
            try:
                ctx.shop.order.refund({})
            except TimeoutError:
                pass
            except (KeyError, ValueError) as err:
                ctx.shop.customer.notify({"error": str(err)})
                raise
            else:
                ctx.data.notes.put({})
            finally:
                print("done")
            try:
                ctx.a.b.c({})
            finally:
                print("no handler: nothing to draw but the body")
    """)
    assert drawn.problems == ()
    assert shape(drawn.nodes) == [
        ("try", [("try", None, [("op", "shop.order.refund")]),
                 ("except TimeoutError", None, []),
                 ("except (KeyError, ValueError) as err", "raise", [("op", "shop.customer.notify")]),
                 ("else", None, [("op", "data.notes.put")])]),
        ("op", "a.b.c"),
    ]
    assert [s.role for s in drawn.nodes[0].sections] == ["body", "handler", "handler", "orelse"]
    assert [s.path for s in drawn.nodes[0].sections] == ["0.0", "0.1", "0.2", "0.3"]
    assert drawn.nodes[0].sections[2].nodes[0].path == "0.2.0"
    assert spans(drawn.nodes)[0] == (2, 5, 12, 22)


def test_a_return_that_ends_an_arm_is_drawn_as_the_way_out() -> None:
    drawn = outline("""
        def run(ctx, input):
            if not input.items:
                return {"skipped": True}
            order = ctx.shop.order.get({})
            with open("x") as f:
                return ctx.shop.order.close({"id": order.id, "f": f.name})
    """)
    assert drawn.problems == ()
    assert shape(drawn.nodes) == [
        ("branch", [("if not input.items", "return", []), ("", None, [])]),
        ("op", "shop.order.get"),
        ("op", "shop.order.close"),
    ]


def test_lambda_run_and_run_found_by_its_first_line() -> None:
    source = textwrap.dedent("""
        def run(ctx, input):
            return ctx.a.b.first({})


        def run(ctx, input):  # noqa: F811 (a second run, the one defined at line 6)
            return ctx.a.b.second({})

        other = lambda ctx, input: ctx.a.b.third({})
    """).lstrip("\n")
    assert shape(outline_of_source(source, "run", "wf.py").nodes) == [("op", "a.b.first")]
    assert shape(outline_of_source(source, "run", "wf.py", line=5).nodes) == [("op", "a.b.second")]
    assert shape(outline_of_source(source, "<lambda>", "wf.py", line=8).nodes) == [("op", "a.b.third")]


def test_outlines_in_source_reads_each_define_workflow_of_a_file_without_importing_it() -> None:
    source = textwrap.dedent("""
        from runs.authoring import define_workflow


        def run(ctx, input):
            helper(ctx)


        first = define_workflow(name="first", run=run)
        second = define_workflow(name="second", run=lambda ctx, input: ctx.a.b.c({}))
    """).lstrip("\n")
    first, second = outlines_in_source(source, "wf.py")
    assert (first.workflow, second.workflow) == ("first", "second")
    assert [(p.line, p.column) for p in first.problems] == [(5, 12)]
    assert second.problems == () and shape(second.nodes) == [("op", "a.b.c")]
    [broken] = outlines_in_source("def run(ctx, input)\n", "wf.py")
    assert broken.problems[0].message.startswith("syntax:")


# ---- the example company ----------------------------------------------------------------------

@pytest.mark.parametrize("definition", COMPANY, ids=lambda d: d.name)
def test_the_example_company_outlines_without_problems(definition: Any) -> None:
    drawn = outline_of(definition)
    assert drawn.problems == ()
    assert outline_problems(definition) == []
    assert drawn.file == definition.run.__code__.co_filename
    assert drawn.nodes
    assert outline_of(definition) is drawn  # computed once per definition


def test_the_example_company_outlines_have_the_expected_shapes() -> None:
    assert shape(outline_of(refund).nodes) == [
        ("op", "shop.order.get"), ("op", "shop.order.refund"), ("op", "shop.customer.notify"), ("op", "data.notes.put")]
    assert shape(outline_of(follow_up).nodes) == [("op", "shop.order.get"), ("sleep",), ("op", "shop.customer.notify")]
    assert shape(outline_of(refunds_report).nodes) == [("op", "shop.refund.list")]
    assert shape(outline_of(reprice).nodes) == [("all", [("", None, [("op", "shop.product.price")])])]
    assert shape(outline_of(onboard_agent).nodes) == [("approval", None), ("op", "shop.staff.grant")]
    assert shape(outline_of(onboard_team).nodes) == [
        ("each", [("", None, [("child", "start")])]), ("all", [("", None, [("child", "wait")])])]
    assert shape(outline_of(await_shipment).nodes) == [
        ("op", "shop.order.get"),
        ("try", [("try", None, [("message", "shipped")]),
                 ("except SanomaError as err", "return", [
                     ("branch", [('if error_code(err) != "wait_timed_out"', "raise", []), ("", None, [])]),
                     ("op", "shop.customer.notify")])]),
        ("op", "shop.customer.notify"),
    ]
    assert [n.path for n in outline_of(await_shipment).walk()] == ["0", "1", "1.0.0", "1.1.0", "1.1.1", "2"]


# ---- the contract -----------------------------------------------------------------------------

@pytest.mark.parametrize(("source", "line", "column", "words"), [
    ("def run(ctx, input):\n    return helper(ctx, input)\n", 2, 19,
     ["ctx is passed to helper()", "cannot see"]),
    ("def run(ctx, input):\n    notify(input, through=ctx)\n", 2, 27, ["ctx is passed to notify()"]),
    ("def run(ctx, input):\n    kept = {'c': ctx}\n", 2, 18, ["ctx is put in a dict"]),
    ("def run(ctx, input):\n    return ctx\n", 2, 12, ["ctx is returned"]),
    ("def run(ctx, input):\n    getattr(ctx, 'shop').order.get({})\n", 2, 13,
     ["getattr() on ctx", "write the call out"]),
    ("def run(ctx, input):\n    getattr(ctx.shop.order, input.verb)({})\n", 2, 13, ["getattr() on ctx.shop.order"]),
    ("def run(ctx, input):\n    ctx.data['notes'].put({})\n", 2, 5, ["ctx.data[...] picks a name at run time"]),
    ("def run(ctx, input):\n    ctx.shop.order({})\n", 2, 5, ["ctx.shop.order(...) is not an operation"]),
    ("def run(ctx, input):\n    ctx.tell({})\n", 2, 5, ["ctx.tell(...) is neither an operation nor a built-in"]),
    ("def run(ctx, input):\n    ctx({})\n", 2, 5, ["ctx itself is called"]),
    ("def run(ctx, input):\n    ctx.run_id()\n", 2, 5, ["ctx.run_id is a value"]),
    ("def run(ctx, input):\n    if input.again:\n        run(None, input)\n", 3, 9,
     ["run refers to itself", "recursion"]),
    ("def run(ctx, input):\n    return sorted(input.items, key=lambda i: ctx.run_id)\n", 2, 46,
     ["lambda that is not a ctx.all member"]),
    ("def run(ctx, input):\n    def tell():\n        ctx.a.b.c({})\n    tell()\n", 4, 5,
     ["tell() uses ctx", "ctx.all member"]),
    ("def run(ctx, input):\n    ctx.all(input.members)\n", 2, 5, ["ctx.all's members must be written in the call"]),
    ("def run(ctx, input):\n    ctx.all([helper])\n", 2, 14, ["a ctx.all member must be a lambda", "helper"]),
    ("def run(ctx, input):\n    ctx.all([lambda: ctx.all([])])\n", 2, 22, ["ctx.all cannot be nested"]),
    ("def run(ctx, input):\n    ctx = input.other\n", 2, 5, ["ctx is assigned to", "one name"]),
    ("def run(ctx, input):\n    for ctx in input.items:\n        pass\n", 2, 9, ["ctx is assigned to"]),
    ("def run(ctx, input):\n    try:\n        pass\n    except KeyError as ctx:\n        pass\n", 4, 5,
     ["except ... as ctx hides run's ctx"]),
    ("def run(ctx, input):\n    try:\n        ctx.a.b.c({})\n    finally:\n        ctx.a.b.d({})\n", 5, 9,
     ["ctx is used in a finally block"]),
    ("def run(ctx, input):\n    try:\n        ctx.a.b.c({})\n    finally:\n        return 1\n", 5, 9,
     ["return in a finally block"]),
    ("def run(ctx, input):\n    if input.done:\n        return 1\n        ctx.a.b.c({})\n", 4, 9,
     ["this never runs: it follows the return at line 3", "remove it"]),
    ("def run(ctx, input):\n    return 1\n    ctx.a.b.c({})\n", 3, 5, ["this never runs", "return at line 2"]),
    ("def run(ctx, input):\n    with lock:\n        return 1\n    ctx.a.b.c({})\n", 4, 5,
     ["this never runs: it follows the return at line 3"]),
    ("def run(ctx, input):\n    for item in input.items:\n        break\n        ctx.a.b.c({})\n", 4, 9,
     ["this never runs: it follows the break at line 3"]),
    ("def run(ctx, input):\n    if input.bad:\n        raise ValueError('bad')\n    ctx.a.b.c({})\n", 3, 9,
     ["raise outside an except handler"]),
    ("def run(ctx, input):\n    for item in input.items:\n        try:\n            ctx.a.b.c({})\n"
     "        finally:\n            break\n", 6, 13, ["break in a finally block leaves the loop", "after the try"]),
    ("def run(ctx, input):\n    for item in input.items:\n        try:\n            pass\n"
     "        finally:\n            if item.x:\n                raise KeyError(item)\n", 7, 17,
     ["raise in a finally block"]),
    ("def run(ctx, input):\n    assert ctx.a.b.ok({}).ok\n", 2, 12, ["assert", "python -O"]),
    ("def run(ctx, input):\n    class Helper:\n        c = ctx\n", 3, 13, ["class defined in run"]),
    ("def run(ctx, input):\n    yield ctx.a.b.c({})\n", 2, 5, ["run yields"]),
    ("async def run(ctx, input):\n    pass\n", 1, 1, ["run is async"]),
    ("def run():\n    pass\n", 1, 1, ["run must take ctx as its first parameter"]),
    ("def run(ctx, input)\n    pass\n", 1, 20, ["syntax:"]),
    ("def other(ctx, input):\n    pass\n", 1, 1, ["run (run) is not in wf.py"]),
])
def test_what_the_outline_cannot_draw_is_a_problem_naming_line_and_why(
        source: str, line: int, column: int, words: list[str]) -> None:
    assert_problem(source, line, column, *words)


def test_a_call_through_a_variable_is_reported_where_it_is_stored_and_where_it_is_called() -> None:
    found = problems("""
        def run(ctx, input):
            get = ctx.shop.order.get
            order = get({"id": input.id})
            c = ctx
            c.shop.order.close({"id": order.id})
    """)
    assert [(line, column) for line, column, _ in found] == [(2, 11), (3, 13), (4, 9), (5, 5)]
    assert "ctx.shop.order.get is stored in get instead of being called" in found[0][2]
    assert "get(...) calls ctx.shop.order.get through the variable get" in found[1][2]
    assert "ctx is stored in c" in found[2][2]
    assert "c.shop.order.close(...) calls ctx through the variable c" in found[3][2]


def test_code_the_outline_does_not_draw_may_break_continue_and_use_lambdas() -> None:
    drawn = outline("""
        def run(ctx, input):
            first = None
            for item in input.items:
                if not item.ok:
                    continue
                first = item
                break
            ordered = sorted(input.items, key=lambda i: i.rank)
            def total(items):
                return sum(i.cents for i in items)
            ctx.shop.order.get({"id": first.id, "total": total(ordered), "run": ctx.run_id})
    """)
    assert drawn.problems == ()
    assert shape(drawn.nodes) == [("op", "shop.order.get")]


def test_raise_inside_an_except_handler_and_returns_ending_arms_are_allowed() -> None:
    assert problems("""
        def run(ctx, input):
            try:
                ctx.a.b.c({})
            except KeyError:
                if input.strict:
                    raise
                return None
            match input.kind:
                case "x":
                    return ctx.a.b.x({})
            return ctx.a.b.d({})
    """) == []


def test_problems_are_sorted_by_position_and_each_is_reported() -> None:
    found = problems("""
        def run(ctx, input):
            helper(ctx)
            for item in input.items:
                ctx.a.b.c({})
                continue
                ctx.a.b.d({})
            x = ctx
    """)
    assert [(line, " ".join(words.split()[:3])) for line, _, words in found] == [
        (2, "ctx is passed"), (6, "this never runs:"), (7, "ctx is stored")]


# ---- definitions ------------------------------------------------------------------------------

def load(folder: Path, name: str, source: str) -> ModuleType:
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"outline_case_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


HELPER = """
    def helper(ctx, payload):
        return ctx.shop.order.get(payload)
"""

WORKFLOW = """
    import sys

    from runs.config.workflows import define_workflow
    from outline_case_helper import helper


    def local_helper(ctx):
        return ctx.shop.order.get({"id": "local"})


    def sneaky():
        ctx = sys._getframe(1).f_locals["ctx"]  # behind the outline's back
        return local_helper(ctx)


    def run(ctx, input):
        order = ctx.shop.order.get({"id": "1"})
        ctx.all([lambda: ctx.shop.order.refund({"id": "1"}), lambda: ctx.approval("Sure?", approver="lead")])
        if input.get("via") == "helper":
            helper(ctx, {"id": "2"})
        if input.get("via") == "local":
            local_helper(ctx)
        if input.get("via") == "sneaky":
            sneaky()
        return {"order": order, "at": ctx.now()}


    WORKFLOW = define_workflow(name="case", run=run, uses=["shop.order.get", "shop.order.refund", "approval", "all"])
"""


class StandInContext:
    """Calls like the engine's: each entry point looks at the frame that called it."""

    def __init__(self, definition: Any) -> None:
        self.definition = definition
        self.seen: list[tuple[str, str | None]] = []

    def _check(self, frame: FrameType, call: str) -> None:
        self.seen.append((call, check_call(self.definition, frame, call)))

    def __getattr__(self, vendor: str) -> Any:
        return _Path(self, (vendor,))

    def all(self, members: list[Any]) -> list[Any]:
        self._check(sys._getframe(1), "all")
        return [member() for member in members]

    def approval(self, title: str, **request: Any) -> str:
        self._check(sys._getframe(1), "approval")
        return "approved"

    def now(self) -> str:
        self._check(sys._getframe(1), "now")
        return "now"


class _Path:
    def __init__(self, ctx: StandInContext, path: tuple[str, ...]) -> None:
        self.ctx, self.path = ctx, path

    def __getattr__(self, name: str) -> _Path:
        return _Path(self.ctx, (*self.path, name))

    def __call__(self, payload: Any) -> dict[str, Any]:
        self.ctx._check(sys._getframe(1), ".".join(self.path))
        return {"called": ".".join(self.path)}


@pytest.fixture
def case(tmp_path: Path) -> Any:
    sys.path.insert(0, str(tmp_path))
    try:
        load(tmp_path, "helper", HELPER)
        yield load(tmp_path, "workflow", WORKFLOW).WORKFLOW
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("outline_case_helper", "outline_case_workflow"):
            sys.modules.pop(name, None)


def test_a_definition_with_problems_names_its_file_and_line(case: Any, tmp_path: Path) -> None:
    found = outline_problems(case)
    file = str(tmp_path / "workflow.py")
    assert [(p.file, p.line) for p in found] == [(file, 20)]  # local_helper(ctx), of the same file, is drawn
    assert str(found[0]).startswith(f"{file}:20:16: ctx is passed to helper(), which is not defined at the top "
                                    "level of this file")
    as_config = config_problems(case, tmp_path)
    assert all(isinstance(p, Problem) for p in as_config)
    assert [(p.file, p.line) for p in as_config] == [("workflow.py", 20)]
    assert str(as_config[0]).startswith('Workflow "case" at workflow.py:20:16: ctx is passed to helper()')


def test_calls_the_outline_shows_pass_and_others_fail_call_not_in_outline(case: Any, tmp_path: Path) -> None:
    ctx = StandInContext(case)
    case.run(ctx, {})
    assert ctx.seen == [("shop.order.get", None), ("all", None), ("shop.order.refund", None), ("approval", None),
                        ("now", None)]

    ctx = StandInContext(case)
    case.run(ctx, {"via": "helper"})
    call, message = ctx.seen[-2]
    assert call == "shop.order.get" and message is not None
    helper_file = tmp_path / "helper.py"
    assert message.startswith(f"ctx.shop.order.get was called from {helper_file}:2:12, which is not in the file of "
                              'workflow "case"')
    assert message.endswith("call ctx directly in run, or in a function of the same file that run calls with ctx "
                            f"({tmp_path / 'workflow.py'})")

    ctx = StandInContext(case)
    case.run(ctx, {"via": "local"})  # a helper of the same file, called with ctx: drawn, so its call passes
    assert ctx.seen[-2] == ("shop.order.get", None)

    ctx = StandInContext(case)
    case.run(ctx, {"via": "sneaky"})  # the same helper, reached by a way the outline does not draw
    call, message = ctx.seen[-2]
    assert message is not None and "workflow.py:8:12 (local_helper), which the outline" in message


def test_a_call_at_a_site_of_another_kind_fails(case: Any) -> None:
    seen: list[Any] = []

    class Recording(StandInContext):
        def approval(self, title: str, **request: Any) -> str:
            frame = sys._getframe(1)  # asked while the call is made: a frame that has returned has moved on
            site = site_of(self.definition, frame)
            seen.append((check_call(self.definition, frame, "shop.order.close"),
                         check_call(self.definition, frame, "approval"),
                         site and (site.call, site.node, site.span.line),
                         call_in_outline(self.definition, frame), call_in_outline(self.definition, frame, "approval"),
                         call_in_outline(self.definition, frame, "all")))
            return "approved"

    case.run(Recording(case), {})
    [(other, same, site, anything, approval, everything)] = seen
    assert other is not None and 'where the outline of workflow "case" shows ctx.approval' in other
    assert same is None
    assert site == ("approval", "1.1.0", 18)
    assert (anything, approval, everything) == (True, True, False)


def test_call_sites_by_file_and_line(case: Any, tmp_path: Path) -> None:
    file = str(tmp_path / "workflow.py")
    sites = outline_of(case).sites
    assert sorted((s.span.line, s.call, s.node) for s in sites) == [
        (8, "shop.order.get", "2.0.0.0.0"),  # in local_helper, drawn inside the helper node at line 22
        (17, "shop.order.get", "0"), (18, "all", "1"), (18, "approval", "1.1.0"), (18, "shop.order.refund", "1.0.0"),
        (25, "now", None)]
    assert call_in_outline(case, (file, 17))
    assert call_in_outline(case, (file, 18), "approval")
    assert call_in_outline(case, (file, 8), "shop.order.get")
    assert not call_in_outline(case, (file, 17), "approval")
    assert not call_in_outline(case, (file, 20))  # helper(ctx, ...) is not a ctx call
    assert not call_in_outline(case, (str(tmp_path / "helper.py"), 2))


def test_builtin_workflows_are_not_held_to_their_outline(case: Any, tmp_path: Path) -> None:
    builtin = replace(case, builtin=True)
    assert outline_problems(builtin) == []
    assert call_in_outline(builtin, (str(tmp_path / "helper.py"), 2))
    assert outline_of(builtin).problems  # still read, for the desk


def test_a_run_that_is_not_a_function_or_whose_file_is_gone_is_a_problem(tmp_path: Path) -> None:
    class Callable:
        def __call__(self, ctx: Any, input: Any) -> None:
            return None

    made = define_workflow(name="made", run=Callable())
    assert "is not a function defined with def or lambda" in outline_problems(made)[0].message
    gone = tmp_path / "gone.py"
    gone.write_text("def run(ctx, input):\n    return None\n", encoding="utf-8")
    namespace: dict[str, Any] = {}
    exec(compile(gone.read_text(encoding="utf-8"), str(gone), "exec"), namespace)
    gone.unlink()
    lost = define_workflow(name="lost", run=namespace["run"])
    found = outline_problems(lost)
    assert len(found) == 1 and 'the file of workflow "lost" cannot be read' in found[0].message
    assert (found[0].file, found[0].line) == (str(gone), 1)


# ---- JSON ---------------------------------------------------------------------------------------

def test_outline_as_json_is_plain_data() -> None:
    drawn = outline("""
        def run(ctx, input):
            try:
                ctx.shop.order.get({})
            except KeyError:
                return None
            for item in input.items:
                ctx.all([lambda: ctx.approval("Ok?", approver="lead")])
            if input.flag:
                ctx.wait_message("go")
    """)
    assert outline_as_json(drawn, Path("/nowhere")) == {
        "workflow": None,
        "file": "wf.py",
        "function": "run",
        "span": {"line": 1, "column": 1, "end_line": 9, "end_column": 31},
        "problems": [],
        "nodes": [
            {"kind": "try", "path": "0", "span": {"line": 2, "column": 5, "end_line": 5, "end_column": 20},
             "body": {"path": "0.0", "label": "try", "ends": None, "nodes": [
                 {"kind": "op", "path": "0.0.0", "span": {"line": 3, "column": 9, "end_line": 3, "end_column": 31},
                  "op": "shop.order.get"}]},
             "handlers": [{"path": "0.1", "label": "except KeyError", "ends": "return", "nodes": []}],
             "orelse": None},
            {"kind": "each", "path": "1", "span": {"line": 6, "column": 5, "end_line": 7, "end_column": 64},
             "label": "for item in input.items",
             "body": {"path": "1.0", "label": "", "ends": None, "nodes": [
                 {"kind": "all", "path": "1.0.0", "span": {"line": 7, "column": 9, "end_line": 7, "end_column": 64},
                  "label": None,
                  "branches": [{"path": "1.0.0.0", "label": "", "ends": None, "nodes": [
                      {"kind": "approval", "path": "1.0.0.0.0",
                       "span": {"line": 7, "column": 26, "end_line": 7, "end_column": 62}, "title": "Ok?"}]}]}]}},
            {"kind": "branch", "path": "2", "span": {"line": 8, "column": 5, "end_line": 9, "end_column": 31},
             "cases": [
                 {"path": "2.0", "label": "if input.flag", "ends": None, "past": False, "nodes": [
                     {"kind": "message", "path": "2.0.0",
                      "span": {"line": 9, "column": 9, "end_line": 9, "end_column": 31}, "topic": "go"}]},
                 {"path": "2.1", "label": "", "ends": None, "past": True, "nodes": []}]},
        ],
    }


def test_json_files_and_problems_are_relative_to_the_root(case: Any, tmp_path: Path) -> None:
    shown = outline_as_json(outline_of(case), tmp_path)
    assert shown["file"] == "workflow.py" and shown["workflow"] == "case"
    assert [(p["file"], p["line"]) for p in shown["problems"]] == [("workflow.py", 20)]
    assert node_as_json(outline_of(case).nodes[0]) == shown["nodes"][0]
