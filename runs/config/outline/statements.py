"""Reading statements: blocks and how they end, branches, loops, try."""
from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import replace

from runs.config.outline.base import FINALLY, FUNCTIONS, Base, Draft, Sec, Where

_ENDERS = (ast.Return, ast.Raise, ast.Break, ast.Continue)
_OWN_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _ender(stmt: ast.stmt) -> ast.stmt | None:
    """The return, raise, break or continue that always ends the block `stmt` is in, if one does."""
    if isinstance(stmt, _ENDERS):
        return stmt
    if isinstance(stmt, (ast.With, ast.AsyncWith)) or isinstance(stmt, (ast.Try, ast.TryStar)) and not stmt.handlers:
        for inner in stmt.body:
            found = _ender(inner)
            if found is not None:
                return found
    return None


def _ending(stmt: ast.stmt) -> str | None:
    return {ast.Return: "return", ast.Raise: "raise", ast.Break: "break", ast.Continue: "continue"}.get(type(stmt))


def _inside(loop: ast.For | ast.AsyncFor | ast.While, kinds: tuple[type[ast.AST], ...]) -> bool:
    """Whether the loop's own body holds one of `kinds` (inner loops, functions and classes left out
    for break and continue, which belong to the innermost loop; only functions for return and raise)."""
    own_loops = ast.Break in kinds or ast.Continue in kinds
    todo: list[ast.AST] = list(loop.body)
    while todo:
        node = todo.pop()
        if isinstance(node, kinds):
            return True
        if isinstance(node, _OWN_SCOPES) or own_loops and isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return False


class Statements(Base):
    def block(self, stmts: Sequence[ast.stmt], where: Where) -> tuple[list[Draft], str | None]:
        """A block's nodes, and how it ends (None: it runs on past its end). A `break` or `continue`
        of a loop the outline does not draw is no end it shows."""
        nodes: list[Draft] = []
        for index, stmt in enumerate(stmts):
            nodes.extend(self.stmt(stmt, where))
            ender = _ender(stmt)
            if ender is not None:
                ends = _ending(ender)
                assert ends is not None
                self.unreachable(stmts[index + 1:], ender, ends)
                if ends in ("break", "continue") and not (where.loops and where.loops[-1]):
                    ends = None
                return nodes, ends
        return nodes, None

    def unreachable(self, rest: Sequence[ast.stmt], ender: ast.stmt, word: str) -> None:
        """Code after a return, raise, break or continue never runs: drawing its calls would be wrong."""
        for stmt in rest:
            name = self.uses_ctx(stmt)
            if name is not None:
                self.problem(name, f"this never runs: it follows the {word} at line {ender.lineno} in the same "
                                   f"block; remove it, or put the {word} under an if")
                return

    def stmt(self, s: ast.stmt, where: Where) -> list[Draft]:
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
            return self.ender(s, where)
        if isinstance(s, (ast.Break, ast.Continue)):
            self.leave_loop(s, where)
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
            body, _ = self.block(s.body, where)
            return nodes + body
        if isinstance(s, ast.Match):
            return self.match_stmt(s, where)
        if isinstance(s, FUNCTIONS):
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
                self.problem(name, f"ctx is used in a class defined in {self.owner}: the outline cannot read it; "
                                   f"call ctx directly in {self.owner}")
            return []
        if isinstance(s, ast.Assert):
            name = self.uses_ctx(s)
            if name is not None:
                self.problem(name, "ctx is used in an assert, which python -O leaves out: call it before the "
                                   "assert and check its result")
            return []
        return []  # pass, import, global, nonlocal: nothing to draw

    def ender(self, s: ast.Return | ast.Raise, where: Where) -> list[Draft]:
        word = "return" if isinstance(s, ast.Return) else "raise"
        nodes = self.expr(s.value, where) if isinstance(s, ast.Return) else (
            self.expr(s.exc, where) + self.expr(s.cause, where))
        if where.zone == FINALLY:
            self.problem(s, f"{word} in a finally block: it would replace how the try ended, which the outline "
                            "cannot show")
        elif word == "raise" and not where.in_handler:
            self.problem(s, "raise outside an except handler: the outline cannot show the run failing here; "
                            "check the input in its schema, or raise from an except handler")
        return nodes

    def leave_loop(self, s: ast.Break | ast.Continue, where: Where) -> None:
        """A break or continue in a finally, of a drawn loop around the try, would replace how the try ended."""
        word = "break" if isinstance(s, ast.Break) else "continue"
        if where.finally_loops is not None and where.finally_loops == len(where.loops) and where.loops[-1:] == (True,):
            self.problem(s, f"{word} in a finally block leaves the loop around the try: it would replace how the "
                            "try ended, which the outline cannot show; put it after the try")

    def if_stmt(self, s: ast.If, where: Where) -> list[Draft]:
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
        drawn = self.branch(s, [(label, self.block(body, where)) for label, body in arms], has_else)
        patch = patch_name(s.test)
        if patch is not None:
            for draft in drawn:
                draft.info["patch"] = patch  # the branch a patch marker chooses: new path, or the old
        return before + drawn

    def branch(self, at: ast.AST, arms: Sequence[tuple[str, tuple[list[Draft], str | None]]],
               covered: bool) -> list[Draft]:
        """A branch of the arms that do something; the way past when some way through does nothing."""
        cases = [Sec("case", label, nodes, ends) for label, (nodes, ends) in arms if nodes or ends]
        if not cases:
            return []
        if not covered or len(cases) < len(arms):
            cases.append(Sec("past", "", []))
        return [Draft("branch", at, sections=cases)]

    def match_stmt(self, s: ast.Match, where: Where) -> list[Draft]:
        before = self.expr(s.subject, where)
        arms = []
        covered = False
        for case in s.cases:
            label = f"case {self.text(case.pattern)}" + (f" if {self.text(case.guard)}" if case.guard else "")
            guard = self.expr(case.guard, where) if case.guard is not None else []
            nodes, ends = self.block(case.body, where)
            arms.append((label, (guard + nodes, ends)))
            if case.guard is None and isinstance(case.pattern, ast.MatchAs) and case.pattern.pattern is None:
                covered = True
        return before + self.branch(s, arms, covered)

    # -- loops

    def loop_where(self, loop: ast.For | ast.AsyncFor | ast.While, where: Where) -> Where:
        """Inside a loop: it is drawn when it calls ctx, or may end the run (a return or raise in it)."""
        drawn = self.calls_ctx(loop) or _inside(loop, (ast.Return, ast.Raise))
        return replace(where, loops=(*where.loops, drawn))

    def loop_else(self, loop: ast.For | ast.AsyncFor | ast.While, where: Where, inner: Where) -> list[Draft]:
        """A loop's `else` runs when no break left it: a branch, when a break of a drawn loop may skip it."""
        nodes, ends = self.block(loop.orelse, where)
        if not (inner.loops[-1] and _inside(loop, (ast.Break,))) or not (nodes or ends):
            return nodes
        return self.branch(loop, [("else (no break)", (nodes, ends))], False)

    def for_stmt(self, s: ast.For | ast.AsyncFor, where: Where) -> list[Draft]:
        nodes = self.expr(s.iter, where)
        inner = self.loop_where(s, where)
        body, ends = self.block(s.body, inner)
        if body or ends:
            label = f"for {self.text(s.target)} in {self.text(s.iter)}"
            nodes.append(Draft("each", s, {"label": label}, [Sec("body", "", body, ends)]))
        return nodes + self.loop_else(s, where, inner)

    def while_stmt(self, s: ast.While, where: Where) -> list[Draft]:
        inner = self.loop_where(s, where)
        test = self.expr(s.test, inner)
        body, ends = self.block(s.body, inner)
        nodes = []
        if test or body or ends:
            label = f"while {self.text(s.test)}"
            nodes.append(Draft("repeat", s, {"label": label}, [Sec("body", "", test + body, ends)]))
        return nodes + self.loop_else(s, where, inner)

    def try_stmt(self, s: ast.Try | ast.TryStar, where: Where) -> list[Draft]:
        body, body_ends = self.block(s.body, where)
        sections = [Sec("body", "try", body, body_ends)]
        for handler in s.handlers:
            label = "except" + (f" {self.text(handler.type)}" if handler.type is not None else "") + (
                f" as {handler.name}" if handler.name else "")
            nodes, ends = self.block(handler.body, replace(where, in_handler=True))
            sections.append(Sec("handler", label, nodes, ends))
        if s.orelse:
            nodes, ends = self.block(s.orelse, where)
            sections.append(Sec("orelse", "else", nodes, ends))
        self.block(s.finalbody, replace(where, zone=FINALLY, finally_loops=len(where.loops)))
        if not s.handlers:
            return body + (sections[-1].nodes if s.orelse else [])
        if not any(section.nodes or section.ends for section in sections):
            return []
        return [Draft("try", s, sections=sections)]


def patch_name(test: ast.expr) -> str | None:
    """The patch an `if ctx.patched("name")` (or `if not ctx.patched("name")`) tests, else None."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if (isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr == "patched"
            and isinstance(test.func.value, ast.Name) and len(test.args) == 1 and not test.keywords
            and isinstance(test.args[0], ast.Constant) and isinstance(test.args[0].value, str)):
        return test.args[0].value
    return None
