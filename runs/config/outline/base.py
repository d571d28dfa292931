"""The reader's working parts: drafts of nodes, where a statement stands, and what one function's
reader shares with the readers of the helpers it calls (the file, its problems, the helpers read)."""
from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from runs.config.outline.model import OutlineProblem, Span

Function = ast.FunctionDef | ast.AsyncFunctionDef
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# The fix every "ctx cannot be used like this" problem names.
DIRECT = ("ctx may only be called directly (ctx.<vendor>.<resource>.<op>(...), ctx.approval(...), ...) in run, "
          "or handed by name to a function defined at the top level of this file (helper(ctx, ...))")
FINALLY = ("ctx is used in a finally block: a finally runs on every way out, failures included, which the "
           "outline cannot draw; call it after the try, or in an except handler")


@dataclass
class Sec:
    role: str
    label: str
    nodes: list[Draft]
    ends: str | None = None


@dataclass(eq=False)
class Draft:
    kind: str
    at: ast.AST
    info: dict[str, Any] = field(default_factory=dict)
    sections: list[Sec] = field(default_factory=list)
    call: str | None = None  # the ctx call this node is, for its call site
    helper: HelperKey | None = None  # a helper node: the helper read, whose body is its section


@dataclass(frozen=True)
class Where:
    in_handler: bool = False
    loops: tuple[bool, ...] = ()  # the loops around, innermost last: is each one drawn
    zone: str | None = None  # why ctx may not be used here at all
    finally_loops: int | None = None  # in a finally: how many of `loops` are outside it
    in_member: bool = False  # inside a ctx.all member


# A helper as read: the function, the name ctx has in it, and whether it was called from a ctx.all
# member (where ctx.all may not be called again).
HelperKey = tuple[ast.FunctionDef, str, bool]


@dataclass(eq=False)
class Helper:
    """A helper's body, read once for every place that calls it the same way."""

    fn: ast.FunctionDef
    ctx: str
    nodes: list[Draft] = field(default_factory=list)
    undrawn: list[tuple[ast.Call, str]] = field(default_factory=list)  # its ctx.now() and ctx.tag() calls


@dataclass(eq=False)
class Shared:
    """What the readers of one workflow share: its file, the top-level functions it may call with ctx,
    the helpers read so far, the helper calls made (caller, call, helper), and every problem."""

    source: str
    file: str
    lines: list[str]
    run: Function | ast.Lambda
    functions: dict[str, Function]
    rebound: set[str]
    problems: list[OutlineProblem] = field(default_factory=list)
    helpers: dict[HelperKey, Helper] = field(default_factory=dict)
    reading: list[ast.FunctionDef] = field(default_factory=list)  # the helpers being read, outermost first
    calls: list[tuple[HelperKey | None, ast.Call, HelperKey]] = field(default_factory=list)

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


class Base:
    """One function's reader (run's, or a helper's): its ctx name and the state of the walk. The
    statement, expression and helper-call halves are mixins over this; `Builder` puts them together."""

    def __init__(self, shared: Shared, function: Function | ast.Lambda, ctx: str, key: HelperKey | None) -> None:
        self.shared = shared
        self.function = function
        self.ctx = ctx
        self.key = key  # None for run
        self.owner = "run" if key is None else f"{key[0].name}()"
        self.parents: dict[ast.AST, ast.AST] = {}
        self.aliases: dict[str, str] = {}
        self.scopes: list[dict[str, Function]] = []
        self.members: dict[ast.AST, list[Draft]] = {}
        self.undrawn: list[tuple[ast.Call, str]] = []
        self.bound: set[str] | None = None  # the names this function binds (read when first needed)

    # -- the shared file

    def span(self, node: ast.AST) -> Span:
        return self.shared.span(node)

    def text(self, node: ast.AST) -> str:
        return self.shared.text(node)

    def problem(self, node: ast.AST, message: str) -> None:
        self.shared.problem(node, message)

    # -- ctx, as this function names it

    def chain(self, node: ast.AST) -> list[str] | None:
        """`ctx.a.b.c` -> ["a", "b", "c"]; `ctx` -> []; anything not rooted at ctx -> None."""
        names: list[str] = []
        while isinstance(node, ast.Attribute):
            names.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id == self.ctx:
            return names[::-1]
        return None

    def is_ctx(self, node: ast.AST | None) -> bool:
        return isinstance(node, ast.Name) and node.id == self.ctx

    def uses_ctx(self, node: ast.AST) -> ast.Name | None:
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name) and inner.id == self.ctx:
                return inner
        return None

    def calls_ctx(self, node: ast.AST) -> bool:
        """Whether `node` calls ctx, or hands ctx to a helper (which calls it)."""
        for inner in ast.walk(node):
            if isinstance(inner, ast.Call) and (self.chain(inner.func) is not None or any(
                    self.is_ctx(arg) for arg in [*inner.args, *(kw.value for kw in inner.keywords)])):
                return True
        return False

    def lookup(self, name: str) -> Function | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    # -- the halves call each other through these

    def block(self, stmts: Sequence[ast.stmt], where: Where) -> tuple[list[Draft], str | None]:
        raise NotImplementedError

    def expr(self, e: ast.AST | None, where: Where) -> list[Draft]:
        raise NotImplementedError

    def member_body(self, fn: Function) -> list[Draft]:
        raise NotImplementedError

    def branch(self, at: ast.AST, arms: Sequence[tuple[str, tuple[list[Draft], str | None]]],
               covered: bool) -> list[Draft]:
        raise NotImplementedError

    def helper_call(self, e: ast.Call, where: Where) -> list[Draft] | None:
        raise NotImplementedError

    def read(self, where: Where) -> list[Draft]:
        raise NotImplementedError
