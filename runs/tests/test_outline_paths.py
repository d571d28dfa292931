"""The outline of ordinary Python: early `return`, `break` and `continue`, and helpers (functions
of the workflow's file that run hands ctx to), drawn; what still cannot be drawn, refused.

Pure: no database. Sources are read with `ast`; the run-time tests run a workflow file from a
temporary folder against a stand-in ctx that asks the outline where each call is.
"""
from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from runs.config.outline import check_call, outline_as_json, outline_of, site_of
from runs.tests.test_outline import StandInContext, load, outline, problems, shape, spans

# ---- early ends ---------------------------------------------------------------------------------


def test_an_early_return_in_a_loop_or_a_branch_ends_that_path() -> None:
    drawn = outline("""
        def run(ctx, input):
            for order_id in input.order_ids:
                order = ctx.shop.order.get({"id": order_id})
                if order.total > 1000:
                    return order_id
            while True:
                if ctx.shop.order.poll({}).done:
                    return "done"
                ctx.sleep(seconds=5)
            return None
    """)
    assert drawn.problems == ()
    assert shape(drawn.nodes) == [
        ("each", [("", None, [("op", "shop.order.get"),
                              ("branch", [("if order.total > 1000", "return", []), ("", None, [])])])]),
        ("repeat", [("", None, [("op", "shop.order.poll"),
                                ("branch", [('if ctx.shop.order.poll({}).done', "return", []), ("", None, [])]),
                                ("sleep",)])]),
    ]


def test_a_return_in_a_loop_that_calls_nothing_still_draws_the_loop_it_may_end_the_run_in() -> None:
    drawn = outline("""
        def run(ctx, input):
            for item in input.items:
                if item.bad:
                    return "bad"
            return ctx.shop.order.get({})
    """)
    assert shape(drawn.nodes) == [
        ("each", [("", None, [("branch", [("if item.bad", "return", []), ("", None, [])])])]),
        ("op", "shop.order.get"),
    ]


def test_break_and_continue_in_a_loop_that_calls_ctx_end_that_turn() -> None:
    drawn = outline("""
        def run(ctx, input):
            for order_id in input.order_ids:
                if not order_id:
                    continue
                order = ctx.shop.order.get({"id": order_id})
                if order.total > 1000:
                    break
                ctx.shop.order.close({"id": order_id})
            while True:
                with lock:
                    ctx.sleep(seconds=1)
                    break
    """)
    assert drawn.problems == ()
    assert shape(drawn.nodes) == [
        ("each", [("", None, [
            ("branch", [("if not order_id", "continue", []), ("", None, [])]),
            ("op", "shop.order.get"),
            ("branch", [("if order.total > 1000", "break", []), ("", None, [])]),
            ("op", "shop.order.close"),
        ])]),
        ("repeat", [("", "break", [("sleep",)])]),  # the body always breaks: its section ends so
    ]


def test_break_and_continue_in_loops_the_outline_does_not_draw_are_not_shown() -> None:
    drawn = outline("""
        def run(ctx, input):
            for order_id in input.order_ids:
                for item in input.items:
                    if item.skip:
                        continue
                    if item.last:
                        break
                ctx.shop.order.get({"id": order_id})
    """)
    assert shape(drawn.nodes) == [("each", [("", None, [("op", "shop.order.get")])])]


def test_a_loop_else_that_a_break_may_skip_is_a_branch() -> None:
    drawn = outline("""
        def run(ctx, input):
            for order_id in input.order_ids:
                if ctx.shop.order.get({"id": order_id}).late:
                    break
            else:
                ctx.shop.customer.notify({"text": "all on time"})
            for order_id in input.order_ids:
                ctx.shop.order.get({"id": order_id})
            else:
                ctx.sleep(seconds=1)
    """)
    assert shape(drawn.nodes) == [
        ("each", [("", None, [("op", "shop.order.get"),
                              ("branch", [('if ctx.shop.order.get({"id": order_id}).late', "break", []),
                                          ("", None, [])])])]),
        ("branch", [("else (no break)", None, [("op", "shop.customer.notify")]), ("", None, [])]),
        ("each", [("", None, [("op", "shop.order.get")])]),
        ("sleep",),  # no break: the else always runs
    ]


def test_an_early_return_in_a_try_a_handler_or_a_match_arm() -> None:
    drawn = outline("""
        def run(ctx, input):
            try:
                found = ctx.shop.order.get({})
                if found.closed:
                    return "closed"
            except KeyError:
                for attempt in range(3):
                    if ctx.shop.order.retry({}).ok:
                        return "retried"
                raise
            match found.kind:
                case "gift":
                    return "gift"
            return ctx.shop.order.close({})
    """)
    assert drawn.problems == ()
    assert shape(drawn.nodes) == [
        ("try", [("try", None, [("op", "shop.order.get"),
                                ("branch", [("if found.closed", "return", []), ("", None, [])])]),
                 ("except KeyError", "raise", [
                     ("each", [("", None, [("op", "shop.order.retry"),
                                           ("branch", [('if ctx.shop.order.retry({}).ok', "return", []),
                                                       ("", None, [])])])])])]),
        ("branch", [('case "gift"', "return", []), ("", None, [])]),
        ("op", "shop.order.close"),
    ]


# ---- helpers ------------------------------------------------------------------------------------

HELPERS = """
    def tell(ctx, to, text="done"):
        ctx.shop.customer.notify({"to": to, "text": text})
        ctx.tag(told=to)


    def look_up(c, order_id):
        order = c.shop.order.get({"id": order_id})
        if order.total > 1000:
            tell(c, "finance")
            return order
        return order


    def quiet(ctx):
        return ctx.now()


    def run(ctx, input):
        order = look_up(ctx, input.order_id)
        for item in input.items:
            tell(ctx, item.owner, text=f"{item.name} shipped")
        ctx.all([lambda: tell(ctx, "a"), lambda: look_up(order_id="2", c=ctx)])
        quiet(ctx)
        return order
"""


def test_a_helper_is_drawn_inside_its_callers_node_at_every_place_that_calls_it() -> None:
    drawn = outline(HELPERS)
    assert drawn.problems == ()
    tell = ("helper", "tell", [("", None, [("op", "shop.customer.notify")])])
    look_up = ("helper", "look_up", [("", None, [
        ("op", "shop.order.get"), ("branch", [("if order.total > 1000", "return", [tell]), ("", None, [])])])])
    assert shape(drawn.nodes) == [
        look_up,
        ("each", [("", None, [tell])]),
        ("all", [("", None, [tell]), ("", None, [look_up])]),
        # quiet() calls only ctx.now(), which is not drawn: nothing to draw
    ]
    first = drawn.nodes[0]
    assert first.info == {"function": "look_up", "label": "look_up(ctx, input.order_id)", "defined_line": 6}
    assert spans(drawn.nodes) == [(19, 13, 19, 41), (20, 5, 21, 59), (22, 5, 22, 76)]  # where it is called
    inner = first.sections[0].nodes[0]
    assert (inner.path, inner.span.line) == ("0.0.0", 7)  # drawn where it is called, spanned where it is written
    nested = first.sections[0].nodes[1].sections[0].nodes[0]
    assert (nested.path, nested.info["label"], nested.sections[0].nodes[0].path) == (
        "0.0.1.0.0", 'tell(c, "finance")', "0.0.1.0.0.0.0")
    assert [n.info["label"] for n in drawn.walk() if n.kind == "helper"] == [
        "look_up(ctx, input.order_id)", 'tell(c, "finance")', 'tell(ctx, item.owner, text=f"{item.name} shipped")',
        'tell(ctx, "a")', 'look_up(order_id="2", c=ctx)', 'tell(c, "finance")']


def test_each_call_inside_a_helper_is_a_site_at_each_place_the_helper_is_drawn() -> None:
    sites = outline(HELPERS).sites
    inside = sorted((s.span.line, s.call, s.node or "") for s in sites if s.span.line < 18)
    assert inside == [
        (2, "shop.customer.notify", "0.0.1.0.0.0.0"),  # run -> look_up -> tell
        (2, "shop.customer.notify", "1.0.0.0.0"),  # run's loop -> tell
        (2, "shop.customer.notify", "2.0.0.0.0"),  # the first ctx.all member -> tell
        (2, "shop.customer.notify", "2.1.0.0.1.0.0.0.0"),  # the second member -> look_up -> tell
        (3, "tag", ""), (3, "tag", ""), (3, "tag", ""), (3, "tag", ""),  # not drawn, but a site at each
        (7, "shop.order.get", "0.0.0"),
        (7, "shop.order.get", "2.1.0.0.0"),
        (15, "now", ""),
    ]
    # Keyed by where the helper calls that lead there end (line, byte column): run's call of look_up
    # (line 19), look_up's of tell (line 9), then the call itself.
    assert sites.by_chain[((19, 40), (9, 26), (2, 54))].node == "0.0.1.0.0.0.0"
    assert sites.by_chain[((22, 73), (9, 26), (2, 54))].node == "2.1.0.0.1.0.0.0.0"
    assert sites.helpers == (("tell", 1, 3), ("look_up", 6, 11), ("quiet", 14, 15))


def test_a_helper_node_as_json() -> None:
    shown = outline_as_json(outline("""
        def tell(ctx, to):
            if to:
                ctx.shop.customer.notify({"to": to})
                return
            ctx.sleep(seconds=1)


        def run(ctx, input):
            tell(ctx, input.to)
    """))
    assert shown["nodes"] == [{
        "kind": "helper", "path": "0", "span": {"line": 9, "column": 5, "end_line": 9, "end_column": 24},
        "function": "tell", "label": "tell(ctx, input.to)", "defined_line": 1,
        "body": {"path": "0.0", "label": "", "ends": None, "nodes": [
            {"kind": "branch", "path": "0.0.0", "span": {"line": 2, "column": 5, "end_line": 4, "end_column": 15},
             "cases": [
                 {"path": "0.0.0.0", "label": "if to", "ends": "return", "past": False, "nodes": [
                     {"kind": "op", "path": "0.0.0.0.0",
                      "span": {"line": 3, "column": 9, "end_line": 3, "end_column": 45},
                      "op": "shop.customer.notify"}]},
                 {"path": "0.0.0.1", "label": "", "ends": None, "past": True, "nodes": []}]},
            {"kind": "sleep", "path": "0.0.1", "span": {"line": 5, "column": 5, "end_line": 5, "end_column": 25}},
        ]},
    }]


def test_a_helper_takes_ctx_by_any_parameter_and_keeps_its_name_there() -> None:
    drawn = outline("""
        def by_keyword(order, *, through):
            return through.shop.order.get({"id": order})


        def second(order, c, /):
            return c.shop.order.close({"id": order})


        def run(ctx, input):
            by_keyword(input.id, through=ctx)
            second(input.id, ctx)
    """)
    assert drawn.problems == ()
    assert shape(drawn.nodes) == [("helper", "by_keyword", [("", None, [("op", "shop.order.get")])]),
                                  ("helper", "second", [("", None, [("op", "shop.order.close")])])]


def test_a_helper_called_in_a_condition_or_an_elif_is_drawn_where_it_runs() -> None:
    drawn = outline("""
        def ready(ctx):
            return ctx.shop.order.get({}).ready


        def run(ctx, input):
            if input.skip:
                pass
            elif ready(ctx):
                ctx.shop.order.close({})
    """)
    helper = ("helper", "ready", [("", None, [("op", "shop.order.get")])])
    assert shape(drawn.nodes) == [
        ("branch", [("else", None, [helper, ("branch", [("if ready(ctx)", None, [("op", "shop.order.close")]),
                                                        ("", None, [])])]),
                    ("", None, [])])]


@pytest.mark.parametrize(("source", "line", "column", "words"), [
    ("def again(ctx, n):\n    ctx.a.b.c({})\n    if n:\n        again(ctx, n - 1)\n\n\n"
     "def run(ctx, input):\n    again(ctx, 3)\n", 4, 9,
     ["again() calls itself (again → again)", "cannot draw recursion", "loop instead"]),
    ("def ping(ctx):\n    pong(ctx)\n\n\ndef pong(ctx):\n    ping(ctx)\n    ctx.a.b.c({})\n\n\n"
     "def run(ctx, input):\n    ping(ctx)\n", 6, 5, ["ping() calls itself (ping → pong → ping)", "recursion"]),
    ("def back(ctx):\n    run(ctx, None)\n\n\ndef run(ctx, input):\n    back(ctx)\n", 2, 5,
     ["back() calls run (run)", "recursion"]),
    ("def run(ctx, input):\n    run(ctx, input)\n", 2, 5, ["run calls run (run)", "recursion"]),
    ("from elsewhere import tell\n\n\ndef run(ctx, input):\n    tell(ctx)\n", 5, 10,
     ["ctx is passed to tell(), which is not defined at the top level of this file", "define the helper in this file"]),
    ("def run(ctx, input):\n    input.client.send(ctx)\n", 2, 23, ["ctx is passed to input.client.send()"]),
    ("def run(ctx, input):\n    def tell(c):\n        c.a.b.c({})\n    tell(ctx)\n", 4, 10,
     ["ctx is passed to tell(), a function defined inside run", "move tell there"]),
    ("def tell(ctx):\n    def inner(c):\n        c.a.b.c({})\n    inner(ctx)\n\n\n"
     "def run(ctx, input):\n    tell(ctx)\n", 4, 11, ["a function defined inside tell()"]),
    ("@cached\ndef tell(ctx):\n    ctx.a.b.c({})\n\n\ndef run(ctx, input):\n    tell(ctx)\n", 7, 5,
     ["tell() is decorated (cached)", "plain def"]),
    ("async def tell(ctx):\n    ctx.a.b.c({})\n\n\ndef run(ctx, input):\n    tell(ctx)\n", 6, 5, ["tell() is async"]),
    ("def tell(ctx):\n    yield ctx.a.b.c({})\n\n\ndef run(ctx, input):\n    tell(ctx)\n", 6, 5, ["tell() yields"]),
    ("def tell(*parts):\n    pass\n\n\ndef run(ctx, input):\n    tell(1, ctx)\n", 6, 13,
     ["ctx lands in *parts of tell()", "a parameter of its own"]),
    ("def tell(ctx):\n    pass\n\n\ndef run(ctx, input):\n    tell(1, ctx)\n", 6, 13, ["ctx is argument 2 of 1"]),
    ("def tell(ctx, text):\n    pass\n\n\ndef run(ctx, input):\n    tell(ctx, text=ctx)\n", 6, 20,
     ["ctx is passed to tell() twice"]),
    ("def tell(ctx, **more):\n    pass\n\n\ndef run(ctx, input):\n    tell(1, c=ctx)\n", 6, 15,
     ["tell() has no parameter c to take ctx (it would land in **more)"]),
    ("def tell(ctx):\n    pass\n\n\ndef run(ctx, input):\n    tell(*input.parts, ctx)\n", 6, 24,
     ["ctx follows a *argument", "hand it first"]),
    ("def fan(ctx):\n    ctx.all([lambda: ctx.a.b.c({})])\n\n\ndef run(ctx, input):\n    ctx.all([lambda: fan(ctx)])\n",
     2, 5, ["ctx.all inside a ctx.all member (fan() is called from one)", "cannot be nested"]),
    ("def tell(ctx):\n    ctx.a.b.c({})\n\n\ndef run(ctx, input):\n    ctx.all([tell])\n", 6, 14,
     ["a ctx.all member must be a lambda", "lambda: tell(ctx, ...)"]),
    ("def fails(ctx):\n    ctx.a.b.c({})\n    raise ValueError('no')\n\n\ndef run(ctx, input):\n    fails(ctx)\n", 3, 5,
     ["raise outside an except handler"]),
    ("def keeps(c):\n    c = None\n\n\ndef run(ctx, input):\n    keeps(ctx)\n", 2, 5,
     ["ctx is assigned to", "the parameter it is handed in, throughout keeps()"]),
    ("def keeps(c):\n    return c\n\n\ndef run(ctx, input):\n    keeps(ctx)\n", 2, 12, ["ctx is returned"]),
    ("def tell(ctx):\n    ctx.a.b.c({})\n\n\ndef run(ctx, input):\n    try:\n        pass\n    finally:\n"
     "        tell(ctx)\n", 9, 14, ["ctx is used in a finally block"]),
    ("def tell(ctx):\n    ctx.a.b.c({})\n\n\ndef run(ctx, input):\n    tell = input.teller\n    tell(ctx)\n",
     7, 10, ["ctx is passed to tell(), a name run binds itself", "by the name of its def"]),
    ("def tell(ctx):\n    ctx.a.b.c({})\n\n\ntell = wrap(tell)\n\n\ndef run(ctx, input):\n    tell(ctx)\n",
     9, 10, ["ctx is passed to tell(), a function the top level of this file binds again"]),
])
def test_what_a_helper_cannot_be_is_a_problem_naming_line_and_why(
        source: str, line: int, column: int, words: list[str]) -> None:
    found = problems(source)
    assert len(found) == 1, found
    assert found[0][:2] == (line, column), found
    for word in words:
        assert word in found[0][2], found


def test_a_problem_inside_a_helper_is_reported_once_however_often_it_is_called() -> None:
    found = problems("""
        def keeps(ctx):
            kept = ctx
            ctx.a.b.c({})


        def run(ctx, input):
            keeps(ctx)
            keeps(ctx)
            ctx.all([lambda: keeps(ctx)])
    """)
    assert [(line, message.split(":")[0]) for line, _, message in found] == [(2, "ctx is stored in kept")]


# ---- at run time --------------------------------------------------------------------------------

WORKFLOW = """
    import sys

    from runs.config.workflows import define_workflow


    def tell(ctx, to):
        return ctx.shop.customer.notify({"to": to})


    def look_up(c, order_id):
        order = c.shop.order.get({"id": order_id})
        tell(c, "finance")
        return order


    def run(ctx, input):
        order = look_up(ctx, "1")
        for to in input.get("to", []):
            if not to:
                continue
            if to == "stop":
                break
            tell(ctx, to)
        ctx.all([lambda: tell(ctx, "a"), lambda: look_up(ctx, "2")])
        if input.get("sneak"):
            sneak()
        return order


    def sneak():  # a helper reached by a way the outline does not draw
        tell(sys._getframe(1).f_locals["ctx"], "sneaked")


    WORKFLOW = define_workflow(name="paths", run=run, uses=["shop.order.get", "shop.customer.notify", "all"])
"""


@pytest.fixture
def paths(tmp_path: Path) -> Any:
    sys.path.insert(0, str(tmp_path))
    try:
        yield load(tmp_path, "paths", WORKFLOW).WORKFLOW
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("outline_case_paths", None)


class Placing(StandInContext):
    """Notes, for each call, the node the outline places it at."""

    def __init__(self, definition: Any) -> None:
        super().__init__(definition)
        self.placed: list[tuple[str, str | None]] = []

    def _check(self, frame: FrameType, call: str) -> None:
        site = site_of(self.definition, frame)
        self.placed.append((call, site.node if site is not None else None))
        super()._check(frame, call)


def test_a_call_inside_a_helper_is_placed_at_the_node_of_the_place_that_called_it(paths: Any) -> None:
    assert outline_of(paths).problems == ()
    ctx = Placing(paths)
    paths.run(ctx, {"to": ["x", "", "y", "stop", "z"]})
    assert all(message is None for _, message in ctx.seen), ctx.seen
    assert ctx.placed == [
        ("shop.order.get", "0.0.0"), ("shop.customer.notify", "0.0.1.0.0"),  # look_up, and tell inside it
        ("shop.customer.notify", "1.0.2.0.0"), ("shop.customer.notify", "1.0.2.0.0"),  # the loop's tell: x, y
        ("all", "2"),
        ("shop.customer.notify", "2.0.0.0.0"),  # the first member's tell
        ("shop.order.get", "2.1.0.0.0"), ("shop.customer.notify", "2.1.0.0.1.0.0"),  # the second's look_up
    ]


def test_a_helper_reached_by_a_way_the_outline_does_not_draw_fails_call_not_in_outline(
        paths: Any, tmp_path: Path) -> None:
    ctx = StandInContext(paths)
    paths.run(ctx, {"sneak": True})
    call, message = ctx.seen[-1]
    assert call == "shop.customer.notify" and message is not None
    assert message.startswith(f"ctx.shop.customer.notify was called from {tmp_path / 'paths.py'}:7:12 (tell), "
                              'which the outline of workflow "paths" does not show')


def test_the_run_time_check_of_a_helper_call_names_another_kind_of_site(paths: Any) -> None:
    seen: list[str | None] = []

    class Asking(StandInContext):
        def __getattr__(self, vendor: str) -> Any:
            outer = self

            class Path:
                def __init__(self, path: tuple[str, ...]) -> None:
                    self.path = path

                def __getattr__(self, name: str) -> Any:
                    return Path((*self.path, name))

                def __call__(self, payload: Any) -> Any:
                    if self.path == ("shop", "customer", "notify"):
                        seen.append(check_call(outer.definition, sys._getframe(1), "shop.order.close"))
                    return {"total": 1}

            return Path((vendor,))

    paths.run(Asking(paths), {})
    assert seen and all(m is not None and "where the outline of workflow \"paths\" shows ctx.shop.customer.notify"
                        in m for m in seen)


COMPREHENDED = """
    from runs.config.workflows import define_workflow


    def get(ctx, order_id):
        return ctx.shop.order.get({"id": order_id})


    def more(ctx):
        return ctx.shop.order.more({})["more"]


    def run(ctx, input):
        orders = [get(ctx, order_id) for order_id in input["ids"]]
        found = any(get(ctx, order_id) for order_id in input["ids"])
        while more(ctx):
            pass
        return orders, found


    WORKFLOW = define_workflow(name="comprehended", run=run, uses=["shop.order.get", "shop.order.more"])
"""


def test_a_helper_called_in_a_comprehension_or_a_while_test_is_placed_there(tmp_path: Path) -> None:
    definition = load(tmp_path, "comprehended", COMPREHENDED).WORKFLOW
    try:
        drawn = outline_of(definition)
        assert drawn.problems == ()
        assert shape(drawn.nodes) == [
            ("each", [("", None, [("helper", "get", [("", None, [("op", "shop.order.get")])])])]),
            ("each", [("", None, [("helper", "get", [("", None, [("op", "shop.order.get")])])])]),
            ("repeat", [("", None, [("helper", "more", [("", None, [("op", "shop.order.more")])])])]),
        ]

        class Answering(Placing):
            def __init__(self, definition: Any) -> None:
                super().__init__(definition)
                self.left = 2

            def __getattr__(self, vendor: str) -> Any:
                outer = self

                class Call:
                    def __init__(self, path: tuple[str, ...]) -> None:
                        self.path = path

                    def __getattr__(self, name: str) -> Any:
                        return Call((*self.path, name))

                    def __call__(self, payload: Any) -> Any:
                        outer._check(sys._getframe(1), ".".join(self.path))
                        outer.left -= self.path[-1] == "more"
                        return {"more": outer.left > 0}

                return Call((vendor,))

        ctx = Answering(definition)
        definition.run(ctx, {"ids": ["1", "2"]})
        assert all(message is None for _, message in ctx.seen), ctx.seen
        assert ctx.placed == [("shop.order.get", "0.0.0.0.0")] * 2 + [("shop.order.get", "1.0.0.0.0")] + [
            ("shop.order.more", "2.0.0.0.0")] * 2
    finally:
        sys.modules.pop("outline_case_comprehended", None)
