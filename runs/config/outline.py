"""The outline of a workflow: what its `run` does, read from its file with `ast` (never run).

The outline is a tree of nodes: `op` (a `ctx.<vendor>.<resource>.<op>(...)` or a collection's
`ctx.data.<name>.<op>(...)` call), `approval`, `sleep`, `message` (`ctx.wait_message`), `child`
(`ctx.start_run` / `ctx.wait_run`), `all` (a branch per member), `each` (a `for` loop or a
comprehension), `repeat` (a `while` loop), `branch` (if/elif/else, match, `x if c else y`,
`and`/`or`: a case per arm that does something, plus an empty case for the way past) and `try`
(its body, its handlers, its `else`). Code that calls nothing through `ctx` is left out;
`ctx.now()` and `ctx.tag()` have no effect the outline would show, so they are not drawn, but they
are call sites like any other.

The outline is also a contract: `run` may only hold what the outline can draw. `outline_problems`
lists every place it cannot (ctx handed on, stored or reached with getattr, a call through a
variable, an early return, a `raise` outside an `except`, `break`/`continue` in a loop that calls
ctx, ctx in a `finally`, ...), each with file, line, column and why. At run time `check_call` holds
each ctx call to the outline: a call from a place the outline does not show (a helper in another
file) is refused before the policy or the vendor sees it.

Columns are 1-based and count UTF-16 code units, like the rest of sanoma's file positions; an
`end_column` is the column just past the node's last character. Plain Python: importable without
Django.
"""
from __future__ import annotations

import ast
import io
import threading
import tokenize
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

from connectors.errors import Problem, ProblemKind
from runs.config.workflows import WorkflowDefinition

# The built-ins the outline draws, and the node kind each one is.
DRAWN_BUILTINS = {
    "approval": "approval",
    "sleep": "sleep",
    "wait_message": "message",
    "start_run": "child",
    "wait_run": "child",
    "all": "all",
}
# Built-ins called through ctx that change nothing the outline shows: call sites, never nodes.
UNDRAWN_BUILTINS = ("now", "tag")
# What may be read from ctx without calling it.
VALUES = ("run_id",)
NODE_KINDS = ("op", "approval", "sleep", "message", "child", "all", "each", "repeat", "branch", "try")
CALL_NOT_IN_OUTLINE = "call_not_in_outline"
_REFLECTION = ("getattr", "setattr", "hasattr", "delattr", "vars", "dir")


# ---- what an outline is made of ---------------------------------------------------------------

@dataclass(frozen=True)
class Span:
    """Where a node is: 1-based line and column (UTF-16 units); the end is just past its last character."""

    line: int
    column: int
    end_line: int
    end_column: int

    def as_json(self) -> dict[str, int]:
        return {"line": self.line, "column": self.column, "end_line": self.end_line, "end_column": self.end_column}


@dataclass(frozen=True)
class Section:
    """One list of nodes inside a node: a loop's body, a branch's case, a try's handler, an all's branch.

    `role` is `body`, `case`, `past` (the way through a branch that runs none of its cases),
    `handler`, `orelse` or `member`; `ends` is "return" or "raise" when the section ends that way."""

    role: str
    path: str
    label: str
    nodes: tuple[Node, ...]
    ends: str | None = None


@dataclass(frozen=True)
class Node:
    """One thing the outline draws. `info` holds the kind's own fields (`op`, `title`, `topic`,
    `action`/`workflow`, `label`); `sections` the lists of nodes inside it."""

    kind: str
    path: str
    span: Span
    info: Mapping[str, Any] = field(default_factory=dict)
    sections: tuple[Section, ...] = ()

    def walk(self) -> Iterator[Node]:
        yield self
        for section in self.sections:
            for node in section.nodes:
                yield from node.walk()


@dataclass(frozen=True)
class OutlineProblem:
    """A place in `run` the outline cannot draw, and why."""

    file: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message}"

    def as_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "column": self.column, "message": self.message}


@dataclass(frozen=True)
class CallSite:
    """A ctx call the outline shows: where it is, what it calls (`shop.order.get`, `data.notes.put`,
    `approval`, `now`, ...) and its node's path (None for `now` and `tag`, which are not drawn)."""

    file: str
    span: Span
    call: str
    node: str | None


class CallSites:
    """The ctx calls of one outline, keyed by where each call expression ends (line, UTF-8 byte
    column: what `ast` and a frame's instruction positions both give)."""

    def __init__(self, file: str, sites: Mapping[tuple[int, int], CallSite], lines: frozenset[int]) -> None:
        self.file = file
        self.by_end = dict(sites)
        self.lines = lines
        self._positions: dict[CodeType, tuple[tuple[int | None, ...], ...]] = {}

    def __len__(self) -> int:
        return len(self.by_end)

    def __iter__(self) -> Iterator[CallSite]:
        return iter(self.by_end.values())

    def has_line(self, filename: str, line: int) -> bool:
        """A call of the outline spans this line of this file (the coarse check, without a frame)."""
        return filename == self.file and line in self.lines

    def at(self, frame: FrameType) -> CallSite | None:
        """The outline's call that `frame` is making right now, or None."""
        code = frame.f_code
        if code.co_filename != self.file:
            return None
        positions = self._positions.get(code)
        if positions is None:
            positions = tuple(code.co_positions())
            self._positions[code] = positions
        index = frame.f_lasti // 2
        if 0 <= index < len(positions):
            _, end_line, _, end_col = positions[index]
            if end_line is not None and end_col is not None:
                return self.by_end.get((end_line, end_col))
        return None


@dataclass(frozen=True)
class Outline:
    """A workflow's outline: its nodes in program order, what stops it being drawn, and its call sites."""

    workflow: str | None
    file: str | None
    function: str | None
    span: Span | None
    nodes: tuple[Node, ...]
    problems: tuple[OutlineProblem, ...]
    sites: CallSites

    def walk(self) -> Iterator[Node]:
        """Every node, depth first in program order."""
        for node in self.nodes:
            yield from node.walk()


# ---- building it ------------------------------------------------------------------------------

@dataclass
class _Sec:
    role: str
    label: str
    nodes: list[_Draft]
    ends: str | None = None


@dataclass(eq=False)
class _Draft:
    kind: str
    at: ast.AST
    info: dict[str, Any] = field(default_factory=dict)
    sections: list[_Sec] = field(default_factory=list)
    call: str | None = None  # the ctx call this node is, for its call site


@dataclass(frozen=True)
class _Where:
    allow_end: bool = True  # a return (or a raise, in a handler) may end this block
    in_handler: bool = False
    loops: tuple[bool, ...] = ()  # the loops around, innermost last: does each one call ctx
    zone: str | None = None  # why ctx may not be used here at all
    in_member: bool = False  # inside a ctx.all member


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class _Builder:
    def __init__(self, source: str, file: str, function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
                 name: str) -> None:
        self.source = source
        self.file = file
        self.lines = source.split("\n")
        self.function = function
        self.run_name = name  # run's own name, for recursion ("" for a lambda)
        self.problems: list[OutlineProblem] = []
        self.undrawn: list[tuple[ast.Call, str]] = []
        self.ctx = ""
        self.parents: dict[ast.AST, ast.AST] = {}
        self.aliases: dict[str, str] = {}
        self.scopes: list[dict[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
        self.members: dict[ast.AST, list[_Draft]] = {}
        self.sites: dict[tuple[int, int], CallSite] = {}
        self.site_lines: set[int] = set()

    # -- positions and text

    def column(self, line: int, col_offset: int) -> int:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        if text.isascii():
            return col_offset + 1
        prefix = text.encode("utf-8")[:col_offset].decode("utf-8", errors="replace")
        return len(prefix.encode("utf-16-le")) // 2 + 1

    def span(self, node: ast.AST) -> Span:
        line = getattr(node, "lineno", 1)
        end_line = getattr(node, "end_lineno", None) or line
        end_col = getattr(node, "end_col_offset", None)
        col = getattr(node, "col_offset", 0)
        return Span(line, self.column(line, col), end_line,
                    self.column(end_line, end_col if end_col is not None else col))

    def text(self, node: ast.AST) -> str:
        segment = ast.get_source_segment(self.source, node)
        if segment is None:
            segment = ast.unparse(node)
        return " ".join(segment.split())

    def problem(self, node: ast.AST, message: str) -> None:
        span = self.span(node)
        self.problems.append(OutlineProblem(self.file, span.line, span.column, message))

    # -- ctx, as the body names it

    def chain(self, node: ast.AST) -> list[str] | None:
        """`ctx.a.b.c` -> ["a", "b", "c"]; `ctx` -> []; anything not rooted at ctx -> None."""
        names: list[str] = []
        while isinstance(node, ast.Attribute):
            names.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id == self.ctx:
            return names[::-1]
        return None

    def uses_ctx(self, node: ast.AST) -> ast.Name | None:
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name) and inner.id == self.ctx:
                return inner
        return None

    def calls_ctx(self, node: ast.AST) -> bool:
        return any(isinstance(inner, ast.Call) and self.chain(inner.func) is not None for inner in ast.walk(node))

    def lookup(self, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    # -- the whole function

    def build(self) -> list[_Draft]:
        fn = self.function
        args = fn.args
        positional = [*args.posonlyargs, *args.args]
        if not positional:
            self.problem(fn, "run must take ctx as its first parameter: def run(ctx, input)")
            return []
        self.ctx = positional[0].arg
        if isinstance(fn, ast.AsyncFunctionDef):
            self.problem(fn, "run is async: a workflow's run is a plain def, run(ctx, input)")
        for node in ast.walk(fn):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.check_names(fn, positional[0])
        if isinstance(fn, ast.Lambda):
            return self.expr(fn.body, _Where())
        self.scopes.append(self.nested_defs(fn.body))
        nodes, _ = self.block(fn.body, _Where())
        self.scopes.pop()
        return nodes

    def check_names(self, fn: ast.AST, own: ast.arg) -> None:
        """ctx keeps one name: nothing else binds it; and note the variables holding ctx or a part of it."""
        ctx = self.ctx
        for node in ast.walk(fn):
            bound: str | None = None
            if isinstance(node, ast.Name) and node.id == ctx and not isinstance(node.ctx, ast.Load):
                bound = "ctx is assigned to" if isinstance(node.ctx, ast.Store) else "ctx is deleted"
            elif isinstance(node, ast.arg) and node.arg == ctx and node is not own:
                bound = "a parameter named ctx hides run's ctx"
            elif isinstance(node, ast.ExceptHandler) and node.name == ctx:
                bound = "except ... as ctx hides run's ctx"
            elif isinstance(node, ast.alias) and (node.asname or node.name) == ctx:
                bound = "an import named ctx hides run's ctx"
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name == ctx:
                bound = "a match pattern binds ctx"
            elif isinstance(node, (ast.Global, ast.Nonlocal)) and ctx in node.names:
                bound = "ctx is declared global"
            if bound:
                self.problem(node, f"{bound}: ctx must keep one name, run's first parameter, throughout run")
            value: ast.AST | None = None
            targets: Sequence[ast.AST] = ()
            if isinstance(node, ast.Assign):
                value, targets = node.value, node.targets
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                value, targets = node.value, [node.target]
            if value is not None:
                chain = self.chain(value)
                if chain is not None:
                    for target in targets:
                        if isinstance(target, ast.Name) and target.id != ctx:
                            self.aliases[target.id] = ".".join(["ctx", *chain])

    def nested_defs(self, body: Sequence[ast.stmt]) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
        """The functions defined in a body (at any depth of blocks, not inside other functions)."""
        found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        todo: list[ast.AST] = list(body)
        while todo:
            node = todo.pop(0)
            if isinstance(node, _FUNCTIONS):
                found[node.name] = node
                continue
            if isinstance(node, (ast.Lambda, ast.ClassDef)):
                continue
            todo.extend(ast.iter_child_nodes(node))
        return found

    # -- statements

    def block(self, stmts: Sequence[ast.stmt], where: _Where) -> tuple[list[_Draft], str | None]:
        nodes: list[_Draft] = []
        ends: str | None = None
        last = len(stmts) - 1
        for index, stmt in enumerate(stmts):
            nodes.extend(self.stmt(stmt, where, index == last))
            if index == last:
                ends = self.ending(stmt)
        return nodes, ends

    def ending(self, stmt: ast.stmt) -> str | None:
        if isinstance(stmt, ast.Return):
            return "return"
        if isinstance(stmt, ast.Raise):
            return "raise"
        if isinstance(stmt, (ast.With, ast.AsyncWith)) and stmt.body:
            return self.ending(stmt.body[-1])
        return None

    def arm(self, where: _Where) -> _Where:
        """Where an if/match arm, a try body, a handler or an else block is."""
        return replace(where, allow_end=not where.loops and where.zone is None)

    def stmt(self, s: ast.stmt, where: _Where, is_last: bool) -> list[_Draft]:
        if isinstance(s, ast.Expr):
            return self.expr(s.value, where)
        if isinstance(s, ast.Assign):
            nodes = self.expr(s.value, where)
            for target in s.targets:
                nodes += self.expr(target, where)
            return nodes
        if isinstance(s, ast.AugAssign):
            return self.expr(s.target, where) + self.expr(s.value, where)
        if isinstance(s, ast.AnnAssign):
            return (self.expr(s.value, where) + self.expr(s.target, where)) if s.value is not None else []
        if isinstance(s, ast.Delete):
            return [n for target in s.targets for n in self.expr(target, where)]
        if isinstance(s, (ast.Return, ast.Raise)):
            return self.ender(s, where, is_last)
        if isinstance(s, (ast.Break, ast.Continue)):
            if where.loops and where.loops[-1] and where.zone is None:
                if isinstance(s, ast.Break):
                    self.problem(s, "break leaves a loop that calls ctx: the outline draws a loop as running to its "
                                    "end; put the condition in the loop (while ...) or choose the items first")
                else:
                    self.problem(s, "continue skips the rest of a loop body that calls ctx, which the outline "
                                    "cannot show; put the rest under an if instead")
            return []
        if isinstance(s, ast.If):
            return self.if_stmt(s, where)
        if isinstance(s, (ast.For, ast.AsyncFor)):
            return self.for_stmt(s, where)
        if isinstance(s, ast.While):
            return self.while_stmt(s, where)
        if isinstance(s, (ast.Try, ast.TryStar)):
            return self.try_stmt(s, where)
        if isinstance(s, (ast.With, ast.AsyncWith)):
            nodes = []
            for item in s.items:
                nodes += self.expr(item.context_expr, where) + self.expr(item.optional_vars, where)
            body, _ = self.block(s.body, replace(where, allow_end=where.allow_end and is_last))
            return nodes + body
        if isinstance(s, ast.Match):
            return self.match_stmt(s, where)
        if isinstance(s, _FUNCTIONS):
            nodes = [n for d in s.decorator_list for n in self.expr(d, where)]
            nodes += [n for d in [*s.args.defaults, *s.args.kw_defaults] for n in self.expr(d, where)]
            if where.zone is None and self.uses_ctx(s) is not None and s not in self.members:
                self.member_body(s)
            elif where.zone is not None and (name := self.uses_ctx(s)) is not None:
                self.problem(name, where.zone)
            return nodes
        if isinstance(s, ast.ClassDef):
            name = self.uses_ctx(s)
            if name is not None:
                self.problem(name, "ctx is used in a class defined in run: the outline cannot read it; "
                                   "call ctx directly in run")
            return []
        if isinstance(s, ast.Assert):
            name = self.uses_ctx(s)
            if name is not None:
                self.problem(name, "ctx is used in an assert, which python -O leaves out: call it before the "
                                   "assert and check its result")
            return []
        return []  # pass, import, global, nonlocal: nothing to draw

    def ender(self, s: ast.Return | ast.Raise, where: _Where, is_last: bool) -> list[_Draft]:
        word = "return" if isinstance(s, ast.Return) else "raise"
        nodes = self.expr(s.value, where) if isinstance(s, ast.Return) else (
            self.expr(s.exc, where) + self.expr(s.cause, where))
        if where.zone == _FINALLY:
            self.problem(s, f"{word} in a finally block: it would replace how the try ended, which the outline "
                            "cannot show")
        elif where.loops:
            self.problem(s, f"{word} inside a loop: the outline draws a loop as running to its end and cannot "
                            f"show it ending the run; collect what you need and {word} after the loop")
        elif word == "raise" and not where.in_handler:
            self.problem(s, "raise outside an except handler: the outline cannot show the run failing here; "
                            "check the input in its schema, or raise from an except handler")
        elif not (is_last and where.allow_end):
            self.problem(s, f"{word} in the middle of run: only the last statement of run, or of an if/elif/else "
                            f"or match arm, a try, except or else block, may {word}")
        return nodes

    def if_stmt(self, s: ast.If, where: _Where) -> list[_Draft]:
        before = self.expr(s.test, where)
        arms: list[tuple[str, list[ast.stmt]]] = [(f"if {self.text(s.test)}", s.body)]
        has_else = False
        current = s
        while True:
            orelse = current.orelse
            if len(orelse) == 1 and isinstance(orelse[0], ast.If) and not self.calls_ctx(orelse[0].test):
                current = orelse[0]
                self.expr(current.test, where)  # draws nothing (it calls nothing), but may misuse ctx
                arms.append((f"elif {self.text(current.test)}", current.body))
                continue
            if orelse:
                arms.append(("else", orelse))
                has_else = True
            break
        return before + self.branch(s, [(label, self.block(body, self.arm(where))) for label, body in arms],
                                    has_else)

    def branch(self, at: ast.AST, arms: Sequence[tuple[str, tuple[list[_Draft], str | None]]],
               covered: bool) -> list[_Draft]:
        """A branch of the arms that do something; the way past when some way through does nothing."""
        cases = [_Sec("case", label, nodes, ends) for label, (nodes, ends) in arms if nodes or ends]
        if not cases:
            return []
        if not covered or len(cases) < len(arms):
            cases.append(_Sec("past", "", []))
        return [_Draft("branch", at, sections=cases)]

    def match_stmt(self, s: ast.Match, where: _Where) -> list[_Draft]:
        before = self.expr(s.subject, where)
        arms = []
        covered = False
        for case in s.cases:
            label = f"case {self.text(case.pattern)}" + (f" if {self.text(case.guard)}" if case.guard else "")
            guard = self.expr(case.guard, where) if case.guard is not None else []
            nodes, ends = self.block(case.body, self.arm(where))
            arms.append((label, (guard + nodes, ends)))
            if case.guard is None and isinstance(case.pattern, ast.MatchAs) and case.pattern.pattern is None:
                covered = True
        return before + self.branch(s, arms, covered)

    def loop_where(self, loop: ast.AST, where: _Where) -> _Where:
        return replace(where, allow_end=False, loops=(*where.loops, self.calls_ctx(loop)))

    def for_stmt(self, s: ast.For | ast.AsyncFor, where: _Where) -> list[_Draft]:
        nodes = self.expr(s.iter, where)
        body, _ = self.block(s.body, self.loop_where(s, where))
        if body:
            label = f"for {self.text(s.target)} in {self.text(s.iter)}"
            nodes.append(_Draft("each", s, {"label": label}, [_Sec("body", "", body)]))
        orelse, _ = self.block(s.orelse, replace(where, allow_end=False))
        return nodes + orelse

    def while_stmt(self, s: ast.While, where: _Where) -> list[_Draft]:
        inner = self.loop_where(s, where)
        body = self.expr(s.test, inner) + self.block(s.body, inner)[0]
        nodes = [_Draft("repeat", s, {"label": f"while {self.text(s.test)}"}, [_Sec("body", "", body)])] if body else []
        orelse, _ = self.block(s.orelse, replace(where, allow_end=False))
        return nodes + orelse

    def try_stmt(self, s: ast.Try | ast.TryStar, where: _Where) -> list[_Draft]:
        arm = self.arm(where)
        body, body_ends = self.block(s.body, arm)
        sections = [_Sec("body", "try", body, body_ends)]
        for handler in s.handlers:
            label = "except" + (f" {self.text(handler.type)}" if handler.type is not None else "") + (
                f" as {handler.name}" if handler.name else "")
            nodes, ends = self.block(handler.body, replace(arm, in_handler=True))
            sections.append(_Sec("handler", label, nodes, ends))
        if s.orelse:
            nodes, ends = self.block(s.orelse, arm)
            sections.append(_Sec("orelse", "else", nodes, ends))
        self.block(s.finalbody, replace(where, allow_end=False, zone=_FINALLY))
        if not s.handlers:
            return body + (sections[-1].nodes if s.orelse else [])
        if not any(section.nodes or section.ends for section in sections):
            return []
        return [_Draft("try", s, sections=sections)]

    # -- expressions, in the order Python evaluates them

    def expr(self, e: ast.AST | None, where: _Where) -> list[_Draft]:
        if e is None:
            return []
        if isinstance(e, ast.Call):
            return self.call(e, where)
        if isinstance(e, (ast.Attribute, ast.Name)):
            chain = self.chain(e)
            if chain is not None:
                if isinstance(e, ast.Name) and not isinstance(e.ctx, ast.Load):
                    return []  # reported by check_names
                return self.value(e, chain, where)
            if isinstance(e, ast.Name):
                self.name_use(e)
                return []
        if isinstance(e, ast.IfExp):
            before = self.expr(e.test, where)
            arms = [(f"if {self.text(e.test)}", (self.expr(e.body, where), None)),
                    ("else", (self.expr(e.orelse, where), None))]
            return before + self.branch(e, arms, True)
        if isinstance(e, ast.BoolOp):
            return self.boolop(e, 0, where)
        if isinstance(e, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            return self.expr(e.generators[0].iter, where) + self.comprehension(e, 0, where)
        if isinstance(e, ast.Lambda):
            name = self.uses_ctx(e)
            if name is not None:
                self.problem(name, where.zone or "ctx is used in a lambda that is not a ctx.all member: the outline "
                                                 "reads a lambda's calls only as a ctx.all member; call ctx directly "
                                                 "in run")
            return [n for d in [*e.args.defaults, *e.args.kw_defaults] for n in self.expr(d, where)]
        if isinstance(e, ast.Dict):
            nodes = []
            for key, value in zip(e.keys, e.values, strict=True):
                nodes += self.expr(key, where) + self.expr(value, where)
            return nodes
        if isinstance(e, (ast.Yield, ast.YieldFrom)):
            self.problem(e, "run yields: a workflow's run is a plain function that returns its output")
        if isinstance(e, ast.NamedExpr):
            return self.expr(e.value, where)
        nodes = []
        for child in ast.iter_child_nodes(e):
            if isinstance(child, ast.keyword):
                nodes += self.expr(child.value, where)
            elif isinstance(child, ast.expr):
                nodes += self.expr(child, where)
        return nodes

    def name_use(self, e: ast.Name) -> None:
        if not isinstance(e.ctx, ast.Load):
            return
        if e.id == self.run_name:
            self.problem(e, f"run refers to itself ({e.id}): the outline cannot draw recursion; loop instead")
            return
        fn = self.lookup(e.id)
        if fn is not None and self.uses_ctx(fn) is not None:
            self.problem(e, f"{e.id}() uses ctx and is called or passed here: a function defined in run that uses "
                            "ctx may only be listed as a ctx.all member; call ctx directly in run")

    def boolop(self, e: ast.BoolOp, index: int, where: _Where) -> list[_Draft]:
        nodes = self.expr(e.values[index], where)
        if index + 1 >= len(e.values):
            return nodes
        rest = self.boolop(e, index + 1, where)
        if not rest:
            return nodes
        shown = self.text(e.values[index])
        label = f"if {shown}" if isinstance(e.op, ast.And) else f"if not ({shown})"
        return nodes + self.branch(e.values[index + 1], [(label, (rest, None))], False)

    def comprehension(self, e: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp, index: int,
                      where: _Where) -> list[_Draft]:
        generator = e.generators[index]
        body: list[_Draft] = [n for cond in generator.ifs for n in self.expr(cond, where)]
        if index + 1 < len(e.generators):
            rest = self.expr(e.generators[index + 1].iter, where) + self.comprehension(e, index + 1, where)
        elif isinstance(e, ast.DictComp):
            rest = self.expr(e.key, where) + self.expr(e.value, where)
        else:
            rest = self.expr(e.elt, where)
        if generator.ifs and rest:
            conditions = " and ".join(self.text(cond) for cond in generator.ifs)
            body += self.branch(generator.ifs[0], [(f"if {conditions}", (rest, None))], False)
        else:
            body += rest
        if not body:
            return []
        label = f"for {self.text(generator.target)} in {self.text(generator.iter)}"
        return [_Draft("each", e, {"label": label}, [_Sec("body", "", body)])]

    def value(self, e: ast.Attribute | ast.Name, chain: list[str], where: _Where) -> list[_Draft]:
        """ctx, or a part of it, used without calling it: only `ctx.run_id` may be."""
        if where.zone is not None:
            self.problem(e, where.zone)
        elif chain[:1] != ["run_id"]:
            self.problem(e, self.misuse(e, chain))
        return []

    def misuse(self, e: ast.AST, chain: list[str]) -> str:
        shown = ".".join(["ctx", *chain])
        direct = "ctx may only be called directly in run (ctx.<vendor>.<resource>.<op>(...), ctx.approval(...), ...)"
        parent = self.parents.get(e)
        if isinstance(parent, ast.keyword):
            parent = self.parents.get(parent)
        if isinstance(parent, ast.Call) and e is not parent.func:
            called = self.text(parent.func)
            if called in _REFLECTION:
                return (f"{called}() on {shown}: write the call out, ctx.<vendor>.<resource>.<op>(...), so the "
                        "outline can show what it calls")
            return f"{shown} is passed to {called}(): the outline cannot see what {called} does with it; {direct}"
        if isinstance(parent, ast.Subscript) and parent.value is e:
            return f"{shown}[...] picks a name at run time: write the call out, so the outline can show what it calls"
        if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            where = ", ".join(self.text(t) for t in targets)
            if chain:
                return (f"{shown} is stored in {where} instead of being called: call it where it is written, "
                        f"{shown}(...)")
            return f"ctx is stored in {where}: {direct}"
        if isinstance(parent, ast.Return):
            return f"{shown} is returned: {direct}"
        if isinstance(parent, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            return f"{shown} is put in a {type(parent).__name__.lower()}: {direct}"
        return f"{shown} is used as a value here: {direct}"

    def call(self, e: ast.Call, where: _Where) -> list[_Draft]:
        chain = self.chain(e.func)
        if chain is None:
            root = e.func
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in self.aliases:
                self.problem(e, f"{self.text(e.func)}(...) calls {self.aliases[root.id]} through the variable "
                                f"{root.id}: call it directly, so the outline can show it")
            nodes = self.expr(e.func, where)
            nodes += [n for arg in e.args for n in self.expr(arg, where)]
            return nodes + [n for kw in e.keywords for n in self.expr(kw.value, where)]
        if where.zone is not None:
            self.problem(e, where.zone)
            return []
        if not chain:
            self.problem(e, "ctx itself is called: call an operation or a built-in, ctx.<vendor>.<resource>.<op>(...)")
            return []
        if chain[0] in VALUES:
            if len(chain) == 1:
                self.problem(e, f"ctx.{chain[0]} is a value, not something to call")
            return [n for arg in [*e.args, *(kw.value for kw in e.keywords)] for n in self.expr(arg, where)]
        if chain == ["all"]:
            return self.all_call(e, where)
        nodes = [n for arg in e.args for n in self.expr(arg, where)]
        nodes += [n for kw in e.keywords for n in self.expr(kw.value, where)]
        if len(chain) == 1:
            name = chain[0]
            if name in DRAWN_BUILTINS:
                return [*nodes, _Draft(DRAWN_BUILTINS[name], e, self.builtin_info(name, e), call=name)]
            if name in UNDRAWN_BUILTINS:
                self.undrawn.append((e, name))
                return nodes
            self.problem(e, f"ctx.{name}(...) is neither an operation nor a built-in: operations are "
                            "ctx.<vendor>.<resource>.<op>(...)")
            return nodes
        if len(chain) == 2:
            self.problem(e, f"ctx.{'.'.join(chain)}(...) is not an operation: operations are "
                            "ctx.<vendor>.<resource>.<op>(...), collections ctx.data.<name>.<op>(...)")
            return nodes
        op = ".".join(chain)
        return [*nodes, _Draft("op", e, {"op": op}, call=op)]

    def builtin_info(self, name: str, e: ast.Call) -> dict[str, Any]:
        def literal(keyword: str) -> str | None:
            arg: ast.expr | None = e.args[0] if e.args else next(
                (kw.value for kw in e.keywords if kw.arg == keyword), None)
            return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None

        if name == "approval":
            return {"title": literal("title")}
        if name == "wait_message":
            return {"topic": literal("topic")}
        if name == "start_run":
            return {"action": "start", "workflow": literal("workflow")}
        if name == "wait_run":
            return {"action": "wait", "workflow": None}
        return {}

    def all_call(self, e: ast.Call, where: _Where) -> list[_Draft]:
        if where.in_member:
            self.problem(e, "ctx.all inside a ctx.all member: ctx.all cannot be nested")
        before: list[_Draft] = []
        branches: list[_Sec] = []
        label: str | None = None
        arg = e.args[0] if len(e.args) == 1 and not e.keywords else None
        if isinstance(arg, (ast.List, ast.Tuple)):
            for member in arg.elts:
                branches.append(self.member(member, where, before))
        elif isinstance(arg, (ast.ListComp, ast.GeneratorExp)):
            before += self.expr(arg.generators[0].iter, where)
            for index, generator in enumerate(arg.generators):
                if index:
                    before += self.expr(generator.iter, where)
                before += [n for cond in generator.ifs for n in self.expr(cond, where)]
            label = " ".join(f"for {self.text(g.target)} in {self.text(g.iter)}"
                             + "".join(f" if {self.text(c)}" for c in g.ifs) for g in arg.generators)
            branches.append(self.member(arg.elt, where, before))
        else:
            self.problem(e, "ctx.all's members must be written in the call: a list of lambdas "
                            "(ctx.all([lambda: ..., lambda: ...])) or a comprehension "
                            "(ctx.all([lambda item=item: ... for item in items]))")
            before += [n for a in [*e.args, *(kw.value for kw in e.keywords)] for n in self.expr(a, where)]
        return [*before, _Draft("all", e, {"label": label}, branches, call="all")]

    def member(self, m: ast.expr, where: _Where, before: list[_Draft]) -> _Sec:
        if isinstance(m, ast.Lambda):
            before += [n for d in [*m.args.defaults, *m.args.kw_defaults] for n in self.expr(d, where)]
            inside = _Where(in_member=True)
            return _Sec("member", "", self.expr(m.body, inside))
        if isinstance(m, ast.Name) and (fn := self.lookup(m.id)) is not None:
            return _Sec("member", m.id, self.member_body(fn) if self.uses_ctx(fn) is not None else [])
        self.problem(m, "a ctx.all member must be a lambda or a function defined in run, so the outline can "
                        f"read it; {self.text(m)} is neither")
        before += self.expr(m, where)
        return _Sec("member", "", [])

    def member_body(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[_Draft]:
        """A function defined in run that uses ctx: read once, drawn where ctx.all lists it."""
        if fn not in self.members:
            self.members[fn] = []
            self.scopes.append(self.nested_defs(fn.body))
            nodes, _ = self.block(fn.body, _Where(in_member=True))
            self.scopes.pop()
            self.members[fn] = nodes
        return self.members[fn]

    # -- the finished outline

    def freeze(self, draft: _Draft, path: str) -> Node:
        sections = []
        for index, sec in enumerate(draft.sections):
            inner = f"{path}.{index}"
            nodes = tuple(self.freeze(node, f"{inner}.{j}") for j, node in enumerate(sec.nodes))
            sections.append(Section(sec.role, inner, sec.label, nodes, sec.ends))
        node = Node(draft.kind, path, self.span(draft.at), dict(draft.info), tuple(sections))
        if draft.call is not None and isinstance(draft.at, ast.Call):
            self.site(draft.at, draft.call, path)
        return node

    def site(self, call: ast.Call, name: str, path: str | None) -> None:
        key = (call.end_lineno or call.lineno, call.end_col_offset or 0)
        if key not in self.sites:
            self.sites[key] = CallSite(self.file, self.span(call), name, path)
            self.site_lines.update(range(call.lineno, (call.end_lineno or call.lineno) + 1))


_FINALLY = ("ctx is used in a finally block: a finally runs on every way out, failures included, which the "
            "outline cannot draw; call it after the try, or in an except handler")


def _find_function(tree: ast.Module, name: str, line: int | None
                   ) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | None:
    found: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda] = []
    for node in ast.walk(tree):
        if isinstance(node, _FUNCTIONS) and node.name == name:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if line is None or line in (first, node.lineno):
                found.append(node)
        elif isinstance(node, ast.Lambda) and name == "<lambda>" and node.lineno == line:
            found.append(node)
    if not found:
        return None
    top = [node for node in found if node in tree.body]
    return (top or found)[0]


def _read(file: str) -> str:
    with open(file, "rb") as handle:
        data = handle.read()
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")


def _empty(file: str | None, workflow: str | None, function: str | None, problem: OutlineProblem | None
           ) -> Outline:
    return Outline(workflow, file, function, None, (), (problem,) if problem else (),
                   CallSites(file or "", {}, frozenset()))


def outline_of_source(source: str, function_name: str, file: str = "<source>", *, line: int | None = None,
                      workflow: str | None = None) -> Outline:
    """The outline of the function `function_name` (first line `line`, when given) in `source`."""
    source = source.replace("\r\n", "\n").replace("\r", "\n")
    try:
        tree = ast.parse(source, filename=file)
    except SyntaxError as err:
        return _empty(file, workflow, function_name,
                      OutlineProblem(file, err.lineno or 1, (err.offset or 0) or 1, f"syntax: {err.msg}"))
    fn = _find_function(tree, function_name, line)
    if fn is None:
        where = f" at line {line}" if line is not None else ""
        return _empty(file, workflow, function_name, OutlineProblem(
            file, line or 1, 1, f"run ({function_name}) is not in {file}{where}: the outline is read from the "
                                "workflow's file (has it changed since it was loaded?)"))
    builder = _Builder(source, file, fn, function_name if function_name != "<lambda>" else "")
    drafts = builder.build()
    nodes = tuple(builder.freeze(draft, str(index)) for index, draft in enumerate(drafts))
    for call, name in builder.undrawn:
        builder.site(call, name, None)
    problems = sorted(set(builder.problems), key=lambda p: (p.line, p.column, p.message))
    sites = CallSites(file, builder.sites, frozenset(builder.site_lines))
    return Outline(workflow, file, function_name, builder.span(fn), nodes, tuple(problems), sites)


def outlines_in_source(source: str, file: str = "<source>") -> list[Outline]:
    """The outline of each `define_workflow(..., run=...)` in a file's text, without importing it
    (for a lint): `run=` a function's name or a lambda; one outline with the problem for a syntax error."""
    source = source.replace("\r\n", "\n").replace("\r", "\n")
    try:
        tree = ast.parse(source, filename=file)
    except SyntaxError:
        return [outline_of_source(source, "run", file)]
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called = node.func
        if not (isinstance(called, ast.Name) and called.id == "define_workflow"
                or isinstance(called, ast.Attribute) and called.attr == "define_workflow"):
            continue
        keywords = {kw.arg: kw.value for kw in node.keywords if kw.arg}
        name = keywords.get("name")
        workflow = name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else None
        run = keywords.get("run")
        if isinstance(run, ast.Name):
            found.append(outline_of_source(source, run.id, file, workflow=workflow))
        elif isinstance(run, ast.Lambda):
            found.append(outline_of_source(source, "<lambda>", file, line=run.lineno, workflow=workflow))
    return sorted(found, key=lambda o: o.span.line if o.span else 0)


_CACHE: weakref.WeakKeyDictionary[WorkflowDefinition, Outline] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def outline_of(definition: WorkflowDefinition) -> Outline:
    """The workflow's outline, read from the file its `run` is defined in; computed once per definition."""
    outline = _CACHE.get(definition)
    if outline is not None:
        return outline
    outline = _outline(definition)
    with _LOCK:
        return _CACHE.setdefault(definition, outline)


def _outline(definition: WorkflowDefinition) -> Outline:
    run = definition.run
    code = getattr(run, "__code__", None)
    name = getattr(run, "__name__", None)
    if not isinstance(code, CodeType) or not isinstance(name, str):
        file = definition.file or "<unknown>"
        return _empty(definition.file, definition.name, None, OutlineProblem(
            file, 1, 1, f'run of workflow "{definition.name}" is not a function defined with def or lambda, '
                        "so the outline cannot be read"))
    file = code.co_filename
    try:
        source = _read(file)
    except (OSError, UnicodeDecodeError, SyntaxError) as err:
        return _empty(file, definition.name, name, OutlineProblem(
            file, code.co_firstlineno, 1, f'the file of workflow "{definition.name}" cannot be read ({err}): '
                                          "its outline is read from it"))
    return outline_of_source(source, name, file, line=code.co_firstlineno, workflow=definition.name)


def outline_problems(definition: WorkflowDefinition) -> list[OutlineProblem]:
    """Why the workflow's outline cannot be drawn; empty when it can. Built-in workflows (sanoma's
    own `drift`, `apply`, ...) are not held to the contract."""
    if definition.builtin:
        return []
    return list(outline_of(definition).problems)


def config_problems(definition: WorkflowDefinition, root: Path | None = None,
                    kind: ProblemKind = ProblemKind.OTHER) -> list[Problem]:
    """`outline_problems` as config problems: the file relative to `root` (when under it) and the line."""
    problems = []
    for found in outline_problems(definition):
        file = found.file
        if root is not None:
            try:
                file = str(Path(found.file).resolve().relative_to(Path(root).resolve()))
            except ValueError:
                pass
        problems.append(Problem(f'Workflow "{definition.name}" at {file}:{found.line}:{found.column}: '
                                f"{found.message}", kind=kind, file=file, line=found.line))
    return problems


# ---- at run time --------------------------------------------------------------------------------

def site_of(definition: WorkflowDefinition, frame: FrameType) -> CallSite | None:
    """The outline's ctx call `frame` is making (the frame of the workflow code that called ctx), or None."""
    return outline_of(definition).sites.at(frame)


def call_in_outline(definition: WorkflowDefinition, where: FrameType | tuple[str, int],
                    call: str | None = None) -> bool:
    """Whether a ctx call made from `where` is one the outline shows: a frame (exact: the call
    expression it is executing), or `(filename, line)` (coarse: a ctx call of the outline spans
    that line). With `call` (`shop.order.get`, `approval`, ...) the site must call that too.
    Built-in workflows are not held to their outline."""
    if definition.builtin:
        return True
    sites = outline_of(definition).sites
    if isinstance(where, tuple):
        filename, line = where
        if not sites.has_line(filename, line):
            return False
        return call is None or any(s.call == call and s.span.line <= line <= s.span.end_line for s in sites)
    site = sites.at(where)
    return site is not None and (call is None or site.call == call)


def _position(frame: FrameType) -> tuple[int | None, ...] | None:
    """(line, end line, column, end column) of the instruction `frame` is executing; columns are 0-based UTF-8."""
    index = frame.f_lasti // 2
    for found, position in enumerate(frame.f_code.co_positions()):
        if found == index:
            return position
    return None


def check_call(definition: WorkflowDefinition, frame: FrameType, call: str) -> str | None:
    """None when the ctx call `call` made by `frame` is in the outline; else why not (the message of
    a `call_not_in_outline` failure)."""
    if definition.builtin:
        return None
    sites = outline_of(definition).sites
    site = sites.at(frame)
    if site is not None and site.call == call:
        return None
    code = frame.f_code
    position = _position(frame)
    line = position[0] if position is not None and position[0] is not None else frame.f_lineno
    column = position[2] + 1 if position is not None and position[2] is not None else 1
    where = f"{code.co_filename}:{line}:{column}"
    direct = f"call ctx directly in run ({sites.file})"
    if site is not None:
        return (f"ctx.{call} was called from {where}, where the outline of workflow \"{definition.name}\" shows "
                f"ctx.{site.call}: {direct}")
    if code.co_filename != sites.file:
        return (f"ctx.{call} was called from {where}, which is not in the file of workflow \"{definition.name}\", "
                f"so its outline does not show it: {direct}")
    return (f"ctx.{call} was called from {where} ({code.co_name}), which the outline of workflow "
            f"\"{definition.name}\" does not show: {direct}")


# ---- as JSON ------------------------------------------------------------------------------------

def _section_json(section: Section) -> dict[str, Any]:
    shown: dict[str, Any] = {"path": section.path, "label": section.label, "ends": section.ends,
                             "nodes": [node_as_json(node) for node in section.nodes]}
    if section.role in ("case", "past"):
        shown["past"] = section.role == "past"
    return shown


def node_as_json(node: Node) -> dict[str, Any]:
    """One node as plain data: `kind`, `path`, `span`, the kind's fields, and its sections."""
    shown: dict[str, Any] = {"kind": node.kind, "path": node.path, "span": node.span.as_json(), **node.info}
    by_role: dict[str, list[dict[str, Any]]] = {}
    for section in node.sections:
        by_role.setdefault(section.role, []).append(_section_json(section))
    if node.kind in ("each", "repeat"):
        shown["body"] = by_role["body"][0]
    elif node.kind == "all":
        shown["branches"] = by_role.get("member", [])
    elif node.kind == "branch":
        shown["cases"] = [_section_json(section) for section in node.sections]
    elif node.kind == "try":
        shown["body"] = by_role["body"][0]
        shown["handlers"] = by_role.get("handler", [])
        shown["orelse"] = by_role["orelse"][0] if "orelse" in by_role else None
    return shown


def outline_as_json(outline: Outline, root: Path | None = None) -> dict[str, Any]:
    """The outline as plain dicts for the desk and describe_config; `file`s relative to `root` when under it."""
    def relative(file: str | None) -> str | None:
        if file is None or root is None:
            return file
        try:
            return str(Path(file).resolve().relative_to(Path(root).resolve()))
        except ValueError:
            return file

    return {
        "workflow": outline.workflow,
        "file": relative(outline.file),
        "function": outline.function,
        "span": outline.span.as_json() if outline.span else None,
        "nodes": [node_as_json(node) for node in outline.nodes],
        "problems": [{**problem.as_json(), "file": relative(problem.file)} for problem in outline.problems],
    }


__all__ = [
    "CALL_NOT_IN_OUTLINE",
    "DRAWN_BUILTINS",
    "NODE_KINDS",
    "UNDRAWN_BUILTINS",
    "CallSite",
    "CallSites",
    "Node",
    "Outline",
    "OutlineProblem",
    "Section",
    "Span",
    "call_in_outline",
    "check_call",
    "config_problems",
    "node_as_json",
    "outline_as_json",
    "outline_of",
    "outline_of_source",
    "outline_problems",
    "outlines_in_source",
    "site_of",
]
