"""Helpers: functions defined at the top level of the workflow's file that run (or another helper)
calls with ctx. Each is read once for the name ctx has in it, and drawn at every place that calls
it, as a `helper` node holding its calls; recursion is refused."""
from __future__ import annotations

import ast

from runs.config.outline.base import DIRECT, FUNCTIONS, Base, Draft, Function, Helper, HelperKey, Sec, Where


def top_level_functions(tree: ast.Module) -> tuple[dict[str, Function], set[str]]:
    """The functions a file defines at its top level, by name (the last one, when a name is defined
    twice); and the names of those the file's top level also binds otherwise (assigned, imported, a
    class), left out since a call by that name may not reach the def."""
    functions = {node.name: node for node in tree.body if isinstance(node, FUNCTIONS)}
    rebound = set()
    for node in tree.body:
        if not isinstance(node, FUNCTIONS):
            rebound |= _bound(node) & set(functions)
    return {name: fn for name, fn in functions.items() if name not in rebound}, rebound


def _bound(node: ast.AST) -> set[str]:
    """The names a statement (or a function's body) binds, not looking into the functions, lambdas
    and classes it defines."""
    names: set[str] = set()
    todo: list[ast.AST] = [node]
    while todo:
        inner = todo.pop()
        if isinstance(inner, ast.Name) and not isinstance(inner.ctx, ast.Load):
            names.add(inner.id)
        elif isinstance(inner, ast.alias):
            names.add((inner.asname or inner.name).split(".")[0])
        elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and inner is not node:
            names.add(inner.name)
            continue
        elif isinstance(inner, ast.Lambda):
            continue
        todo.extend(ast.iter_child_nodes(inner))
    return names


def _yields(fn: Function) -> ast.AST | None:
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return None


class HelperCalls(Base):
    def helper_call(self, e: ast.Call, where: Where) -> list[Draft] | None:
        """`helper(ctx, ...)`: the other arguments' nodes, then the helper's node; a problem (and no
        helper node) when the outline cannot read what is called."""
        passed = [arg for arg in [*e.args, *(kw.value for kw in e.keywords)]
                  if isinstance(arg, ast.Name) and arg.id == self.ctx]
        nodes = self.expr(e.func, where) if not isinstance(e.func, ast.Name) else []
        nodes += [n for arg in e.args if not self.is_ctx(arg) for n in self.expr(arg, where)]
        nodes += [n for kw in e.keywords if not self.is_ctx(kw.value) for n in self.expr(kw.value, where)]
        if where.zone is not None:
            self.problem(passed[0], where.zone)
            return nodes
        found = self.helper_of(e, passed[0])
        if found is None:
            return nodes
        fn, param = found
        if fn in self.shared.reading:
            names = [f.name for f in self.shared.reading[self.shared.reading.index(fn):]] + [fn.name]
            self.problem(e, f"{fn.name}() calls itself ({' → '.join(names)}): the outline cannot draw recursion; "
                            "loop instead")
            return nodes
        key: HelperKey = (fn, param, where.in_member)
        helper = self.shared.helpers.get(key)
        if helper is None:
            helper = self.shared.helpers[key] = Helper(fn, param)
            self.shared.reading.append(fn)
            try:
                reader = type(self)(self.shared, fn, param, key)
                helper.nodes = reader.read(Where(in_member=where.in_member))
                helper.undrawn = reader.undrawn
            finally:
                self.shared.reading.pop()
        self.shared.calls.append((self.key, e, key))
        if not helper.nodes:
            return nodes
        info = {"function": fn.name, "label": self.text(e), "defined_line": fn.lineno}
        return [*nodes, Draft("helper", e, info, [Sec("body", "", helper.nodes)], helper=key)]

    def helper_of(self, e: ast.Call, ctx: ast.Name) -> tuple[ast.FunctionDef, str] | None:
        """The top-level function `e` hands ctx to, and the name of its parameter that takes it; None
        (with the problem) when it is not one the outline can read."""
        called = self.text(e.func)
        if not isinstance(e.func, ast.Name):
            self.problem(ctx, f"ctx is passed to {called}(): the outline cannot see what {called} does with it; "
                              f"{DIRECT}")
            return None
        name = e.func.id
        run = self.shared.run
        if self.lookup(name) is not None:
            self.problem(ctx, f"ctx is passed to {name}(), a function defined inside {self.owner}: the outline reads "
                              f"a helper only at the top level of the file; move {name} there")
            return None
        if self.bound is None:
            self.bound = _bound(self.function) | {
                arg.arg for arg in ast.walk(self.function.args) if isinstance(arg, ast.arg)}
        if name in self.bound:
            self.problem(ctx, f"ctx is passed to {name}(), a name {self.owner} binds itself, so the outline cannot "
                              f"tell what it calls: call the helper by the name of its def")
            return None
        fn = self.shared.functions.get(name)
        if fn is not None and fn is run:
            what = "run" if self.key is None else self.owner
            self.problem(e, f"{what} calls run ({name}): the outline cannot draw recursion; loop instead")
            return None
        if name in self.shared.rebound:
            self.problem(ctx, f"ctx is passed to {name}(), a function the top level of this file binds again "
                              f"(by an assignment, an import or a class), so the outline cannot tell what "
                              f"{name}(ctx) calls: leave the def as it is written")
            return None
        if fn is None:
            self.problem(ctx, f"ctx is passed to {name}(), which is not defined at the top level of this file: the "
                              f"outline cannot see what {name} does with it; define the helper in this file, "
                              f"def {name}(ctx, ...), or call ctx directly in {self.owner}")
            return None
        if isinstance(fn, ast.AsyncFunctionDef):
            self.problem(e, f"{name}() is async: a helper that takes ctx is a plain def")
            return None
        if fn.decorator_list:
            self.problem(e, f"{name}() is decorated ({self.text(fn.decorator_list[0])}): the outline cannot see what "
                            "a decorator does with ctx; a helper that takes ctx is a plain def")
            return None
        if _yields(fn) is not None:
            self.problem(e, f"{name}() yields: a helper that takes ctx is a plain function that returns")
            return None
        param = self.parameter(e, ctx, fn)
        if param is None:
            return None
        return fn, param

    def parameter(self, e: ast.Call, ctx: ast.Name, fn: ast.FunctionDef) -> str | None:
        """The parameter of `fn` that the ctx of the call `e` is bound to."""
        name = fn.name
        handed = [arg for arg in [*e.args, *(kw.value for kw in e.keywords)] if self.is_ctx(arg)]
        if len(handed) > 1:
            self.problem(handed[1], f"ctx is passed to {name}() twice: hand it once")
            return None
        args = fn.args
        keyword = next((kw for kw in e.keywords if self.is_ctx(kw.value)), None)
        if keyword is not None:
            if keyword.arg is None:
                return None  # f(**ctx): reported as ctx used as a value
            named = [a.arg for a in [*args.args, *args.kwonlyargs]]
            if keyword.arg in named:
                return keyword.arg
            self.problem(ctx, f"{name}() has no parameter {keyword.arg} to take ctx"
                              + (f" (it would land in **{args.kwarg.arg})" if args.kwarg else "")
                              + f": name it in the def, def {name}(..., {keyword.arg}, ...)")
            return None
        index = next(i for i, arg in enumerate(e.args) if self.is_ctx(arg))
        if any(isinstance(arg, ast.Starred) for arg in e.args[:index]):
            self.problem(ctx, f"ctx follows a *argument in the call of {name}(), so the outline cannot tell which "
                              f"parameter takes it: hand it first, {name}(ctx, ...), or by name")
            return None
        positional = [*args.posonlyargs, *args.args]
        if index < len(positional):
            return positional[index].arg
        where = f"lands in *{args.vararg.arg}" if args.vararg else f"is argument {index + 1} of {len(positional)}"
        self.problem(ctx, f"ctx {where} of {name}(): give it a parameter of its own, def {name}(ctx, ...)")
        return None
