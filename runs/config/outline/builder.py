"""One function's reader, put together: run's (whose first parameter is ctx) or a helper's (whose
ctx is the parameter it is handed in)."""
from __future__ import annotations

import ast
from collections.abc import Sequence

from runs.config.outline.base import Draft, Function, Where
from runs.config.outline.expressions import Expressions, nested_defs
from runs.config.outline.helpers import HelperCalls
from runs.config.outline.statements import Statements


class Builder(Statements, Expressions, HelperCalls):
    def build(self) -> list[Draft]:
        """run's nodes (`ctx` is not known yet: it is run's first parameter)."""
        fn = self.function
        args = fn.args
        positional = [*args.posonlyargs, *args.args]
        if not positional:
            self.problem(fn, "run must take ctx as its first parameter: def run(ctx, input)")
            return []
        self.ctx = positional[0].arg
        if isinstance(fn, ast.AsyncFunctionDef):
            self.problem(fn, "run is async: a workflow's run is a plain def, run(ctx, input)")
        self.check_names(fn, positional[0])
        if isinstance(fn, ast.Lambda):
            return self.expr(fn.body, Where())
        return self.read(Where())

    def read(self, where: Where) -> list[Draft]:
        """The nodes of a def's body (run's, or a helper's once its ctx parameter is known)."""
        fn = self.function
        assert not isinstance(fn, ast.Lambda)
        if self.key is not None:
            own = next(a for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs] if a.arg == self.ctx)
            self.check_names(fn, own)
        self.scopes.append(nested_defs(fn.body))
        nodes, _ = self.block(fn.body, where)
        self.scopes.pop()
        return nodes

    def check_names(self, fn: Function | ast.Lambda, own: ast.arg) -> None:
        """ctx keeps one name: nothing else binds it; and note the variables holding ctx or a part of it."""
        for node in ast.walk(fn):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        ctx = self.ctx
        whose = "run's" if self.key is None else f"{self.owner}'s"
        keep = ("run's first parameter, throughout run" if self.key is None
                else f"the parameter it is handed in, throughout {self.owner}")
        for node in ast.walk(fn):
            bound: str | None = None
            if isinstance(node, ast.Name) and node.id == ctx and not isinstance(node.ctx, ast.Load):
                bound = "ctx is assigned to" if isinstance(node.ctx, ast.Store) else "ctx is deleted"
            elif isinstance(node, ast.arg) and node.arg == ctx and node is not own:
                bound = f"a parameter named {ctx} hides {whose} ctx"
            elif isinstance(node, ast.ExceptHandler) and node.name == ctx:
                bound = f"except ... as {ctx} hides {whose} ctx"
            elif isinstance(node, ast.alias) and (node.asname or node.name) == ctx:
                bound = f"an import named {ctx} hides {whose} ctx"
            elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name == ctx:
                bound = "a match pattern binds ctx"
            elif isinstance(node, (ast.Global, ast.Nonlocal)) and ctx in node.names:
                bound = "ctx is declared global"
            if bound:
                self.problem(node, f"{bound}: ctx must keep one name, {keep}")
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
