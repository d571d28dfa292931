"""Reading expressions, in the order Python evaluates them: ctx calls, ctx.all, branches inside
expressions, comprehensions, and what may not be done with ctx."""
from __future__ import annotations

import ast
from typing import Any

from runs.config.outline.base import DIRECT, Base, Draft, Function, Sec, Where
from runs.config.outline.model import DRAWN_BUILTINS, UNDRAWN_BUILTINS, VALUES

_REFLECTION = ("getattr", "setattr", "hasattr", "delattr", "vars", "dir")


class Expressions(Base):
    def expr(self, e: ast.AST | None, where: Where) -> list[Draft]:
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
                                                 f"reads a lambda's calls only as a ctx.all member; call ctx directly "
                                                 f"in {self.owner}")
            return [n for d in [*e.args.defaults, *e.args.kw_defaults] for n in self.expr(d, where)]
        if isinstance(e, ast.Dict):
            nodes = []
            for key, value in zip(e.keys, e.values, strict=True):
                nodes += self.expr(key, where) + self.expr(value, where)
            return nodes
        if isinstance(e, (ast.Yield, ast.YieldFrom)):
            self.problem(e, f"{self.owner} yields: a workflow's run, and a helper it hands ctx to, is a plain "
                            "function that returns its output")
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
        run = self.shared.run
        if not isinstance(run, ast.Lambda) and e.id == run.name and self.lookup(e.id) is None:
            what = "run refers to itself" if self.key is None else f"{self.owner} refers to run"
            self.problem(e, f"{what} ({e.id}): the outline cannot draw recursion; loop instead")
            return
        fn = self.lookup(e.id)
        if fn is not None and self.uses_ctx(fn) is not None:
            self.problem(e, f"{e.id}() uses ctx and is called or passed here: a function defined in {self.owner} "
                            "that uses ctx may only be listed as a ctx.all member; to call it, define it at the top "
                            f"level of the file, taking ctx (def {e.id}(ctx, ...)), and call it {e.id}(ctx, ...)")

    def boolop(self, e: ast.BoolOp, index: int, where: Where) -> list[Draft]:
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
                      where: Where) -> list[Draft]:
        generator = e.generators[index]
        body: list[Draft] = [n for cond in generator.ifs for n in self.expr(cond, where)]
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
        return [Draft("each", e, {"label": label}, [Sec("body", "", body)])]

    def value(self, e: ast.Attribute | ast.Name, chain: list[str], where: Where) -> list[Draft]:
        """ctx, or a part of it, used without calling it: only `ctx.run_id` may be."""
        if where.zone is not None:
            self.problem(e, where.zone)
        elif chain[:1] != ["run_id"]:
            self.problem(e, self.misuse(e, chain))
        return []

    def misuse(self, e: ast.AST, chain: list[str]) -> str:
        shown = ".".join(["ctx", *chain])
        parent = self.parents.get(e)
        if isinstance(parent, ast.keyword):
            parent = self.parents.get(parent)
        if isinstance(parent, ast.Call) and e is not parent.func:
            called = self.text(parent.func)
            if called in _REFLECTION:
                return (f"{called}() on {shown}: write the call out, ctx.<vendor>.<resource>.<op>(...), so the "
                        "outline can show what it calls")
            return f"{shown} is passed to {called}(): the outline cannot see what {called} does with it; {DIRECT}"
        if isinstance(parent, ast.Subscript) and parent.value is e:
            return f"{shown}[...] picks a name at run time: write the call out, so the outline can show what it calls"
        if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            where = ", ".join(self.text(t) for t in targets)
            if chain:
                return (f"{shown} is stored in {where} instead of being called: call it where it is written, "
                        f"{shown}(...)")
            return f"ctx is stored in {where}: {DIRECT}"
        if isinstance(parent, ast.Return):
            return f"{shown} is returned: {DIRECT}"
        if isinstance(parent, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            return f"{shown} is put in a {type(parent).__name__.lower()}: {DIRECT}"
        return f"{shown} is used as a value here: {DIRECT}"

    def call(self, e: ast.Call, where: Where) -> list[Draft]:
        chain = self.chain(e.func)
        if chain is None:
            reflection = isinstance(e.func, ast.Name) and e.func.id in _REFLECTION \
                and e.func.id not in self.shared.functions
            if not reflection and any(self.is_ctx(arg) for arg in [*e.args, *(kw.value for kw in e.keywords)]):
                return self.helper_call(e, where) or []
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
                return [*nodes, Draft(DRAWN_BUILTINS[name], e, self.builtin_info(name, e), call=name)]
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
        return [*nodes, Draft("op", e, {"op": op}, call=op)]

    def builtin_info(self, name: str, e: ast.Call) -> dict[str, Any]:
        def literal(keyword: str) -> str | None:
            arg: ast.expr | None = e.args[0] if e.args else next(
                (kw.value for kw in e.keywords if kw.arg == keyword), None)
            return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None

        if name == "approval":
            return {"title": literal("title")}
        if name == "wait_message":
            model = next((kw.value for kw in e.keywords if kw.arg == "model"), None)
            # The model's name as written (`Shipped`), so a page can say what the payload holds.
            return {"topic": literal("topic"), **({"model": self.text(model)} if model is not None else {})}
        if name == "start_run":
            return {"action": "start", "workflow": literal("workflow")}
        if name == "wait_run":
            return {"action": "wait", "workflow": None}
        return {}

    def all_call(self, e: ast.Call, where: Where) -> list[Draft]:
        if where.in_member:
            through = f" ({self.owner} is called from one)" if self.key is not None and self.key[2] else ""
            self.problem(e, f"ctx.all inside a ctx.all member{through}: ctx.all cannot be nested")
        before: list[Draft] = []
        branches: list[Sec] = []
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
        return [*before, Draft("all", e, {"label": label}, branches, call="all")]

    def member(self, m: ast.expr, where: Where, before: list[Draft]) -> Sec:
        if isinstance(m, ast.Lambda):
            before += [n for d in [*m.args.defaults, *m.args.kw_defaults] for n in self.expr(d, where)]
            inside = Where(in_member=True)
            return Sec("member", "", self.expr(m.body, inside))
        if isinstance(m, ast.Name) and (fn := self.lookup(m.id)) is not None:
            return Sec("member", m.id, self.member_body(fn) if self.uses_ctx(fn) is not None else [])
        hint = f": call the helper from a lambda, lambda: {m.id}(ctx, ...)" if isinstance(m, ast.Name) \
            and m.id in self.shared.functions else ""
        self.problem(m, f"a ctx.all member must be a lambda or a function defined in {self.owner}, so the outline can "
                        f"read it; {self.text(m)} is neither{hint}")
        before += self.expr(m, where)
        return Sec("member", "", [])

    def member_body(self, fn: Function) -> list[Draft]:
        """A function defined in run (or a helper) that uses ctx: read once, drawn where ctx.all lists it."""
        if fn not in self.members:
            self.members[fn] = []
            self.scopes.append(nested_defs(fn.body))
            nodes, _ = self.block(fn.body, Where(in_member=True))
            self.scopes.pop()
            self.members[fn] = nodes
        return self.members[fn]


def nested_defs(body: list[ast.stmt]) -> dict[str, Function]:
    """The functions defined in a body (at any depth of blocks, not inside other functions)."""
    found: dict[str, Function] = {}
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found[node.name] = node
            continue
        if isinstance(node, (ast.Lambda, ast.ClassDef)):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return found
