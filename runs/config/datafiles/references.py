"""The data-file reader's later phases: imports followed to the declarations they name, references
resolved, then the whole set checked (a name or identity declared twice, a cycle) and whatever
depends on a resource left out is left out too."""
from __future__ import annotations

import ast
import json
from typing import Any

from connectors.resources import Ref, plain_value
from runs.config.datafiles.results import DeclaredResource
from runs.config.datafiles.state import _Binding, _Decl, _File, _Name, _ReaderState


class _References(_ReaderState):

    def check_imports(self, file: _File) -> None:
        for local, binding in file.bindings.items():
            if binding.kind == "import":
                reason = self.follow(file, local, binding, set())
                if isinstance(reason, str):
                    self.problem(file, binding.node, reason)
                    binding.kind = "refused"

    def follow(self, file: _File, local: str, binding: _Binding, seen: set[tuple[str, str]]) -> _Decl | str:
        """The declaration an imported name is, following re-imports; or why there is none."""
        key = (binding.module, binding.attr)
        if key in seen:
            return f"{local} is imported in a circle through {binding.module}"
        seen.add(key)
        target_file = self.modules[binding.module]
        target = target_file.bindings.get(binding.attr)
        if target is None:
            return (f"{binding.module} declares no {binding.attr}"
                    + (f" (it declares {', '.join(d.name for d in target_file.decls)})" if target_file.decls else ""))
        if target.kind == "decl" and target.decl is not None:
            return target.decl
        if target.kind == "import":
            return self.follow(target_file, binding.attr, target, seen)
        return f"{binding.module}.{binding.attr} is not a resource declared there"

    # phase 2b: references

    def link(self, decl: _Decl) -> None:
        file = decl.file
        for use in decl.names:
            binding = file.bindings.get(use.name)
            if binding is None:
                self.problem(file, use.node, f"{use.name} is not declared: declare it in this file "
                                             f"({use.name} = vendor.type(...)) or import it "
                                             f"(from {self.package}.resources.<file> import {use.name})", decl)
                continue
            if binding.kind == "decl" and binding.decl is not None:
                decl.targets.append((binding.decl, use.node))
            elif binding.kind == "import":
                target = self.follow(file, use.name, binding, set())
                if isinstance(target, _Decl):
                    decl.targets.append((target, use.node))
            elif binding.kind == "refused":
                self.problem(file, use.node, f"left out: {use.name} comes from an import that is refused "
                                             f"(line {getattr(binding.node, 'lineno', '?')})", decl)
            else:
                what = {"connector": "a connector", "runtime": "sanoma's runtime", "function": "a function"}[
                    binding.kind]
                self.problem(file, use.node, f"{use.name} is {what}, not a resource: a reference names a declared "
                                             f"resource", decl)

    def declare(self, decl: _Decl) -> None:
        if decl.rt is None or decl.broken:
            return
        target_of = {id(node): target for target, node in decl.targets}
        if any(target.rt is None for target, _ in decl.targets):
            return  # left out below, as a dependant of a resource with problems

        def resolved(value: Any) -> Any:
            if isinstance(value, _Name):
                target = target_of[id(value.node)]
                assert target.rt is not None
                return Ref(id=target.id, type=target.rt.key, name=target.name)
            if isinstance(value, list):
                return [resolved(v) for v in value]
            if isinstance(value, dict):
                return {k: resolved(v) for k, v in value.items()}
            return value

        raw = {key: resolved(value) for key, (_, value) in decl.raw.items()}
        clean, problems = decl.rt.declare(decl.name, raw)
        for problem in problems:
            node: ast.AST = decl.stmt.value
            if problem.field in decl.raw:
                node = decl.raw[problem.field][0].value
            self.problem(decl.file, node, f"{decl.name}: {problem.message}", decl)
        if not problems:
            decl.values = clean

    # phase 3: the whole set

    def duplicates(self) -> None:
        named: dict[tuple[str, str], _Decl] = {}
        identified: dict[tuple[str, str], _Decl] = {}
        for file in self.files:
            for decl in file.decls:
                if decl.broken or decl.rt is None:
                    continue
                key = (decl.rt.key, decl.name)
                first = named.setdefault(key, decl)
                if first is not decl:
                    self.problem(file, decl.stmt.targets[0], f"{decl.name}: a {decl.rt.key} named {decl.name} is "
                                                             f"declared twice, also as {first.id}", decl)
                    continue
                identity = {f: plain_value(decl.values.get(f)) for f in decl.rt.identity}
                ident = (decl.rt.key, json.dumps(identity, sort_keys=True))
                first = identified.setdefault(ident, decl)
                if first is not decl:
                    shown = ", ".join(f"{k}={v!r}" for k, v in identity.items())
                    self.problem(file, decl.stmt.targets[0], f"{decl.name}: declares the {decl.rt.key} {shown} "
                                                             f"twice, also as {first.id}", decl)

    def cycles(self) -> None:
        """Tarjan's strongly connected components over the references; each cycle is a problem."""
        decls = [d for f in self.files for d in f.decls]
        index: dict[int, int] = {}
        low: dict[int, int] = {}
        stack: list[_Decl] = []
        on_stack: set[int] = set()
        components: list[list[_Decl]] = []
        counter = 0
        for start in decls:
            if id(start) in index:
                continue
            work: list[tuple[_Decl, int]] = [(start, 0)]
            while work:
                node, edge = work.pop()
                if edge == 0:
                    index[id(node)] = low[id(node)] = counter
                    counter += 1
                    stack.append(node)
                    on_stack.add(id(node))
                if edge < len(node.targets):
                    work.append((node, edge + 1))
                    nxt = node.targets[edge][0]
                    if id(nxt) not in index:
                        work.append((nxt, 0))
                    elif id(nxt) in on_stack:
                        low[id(node)] = min(low[id(node)], index[id(nxt)])
                    continue
                for target, _ in node.targets:
                    if id(target) in on_stack:
                        low[id(node)] = min(low[id(node)], low[id(target)])
                if low[id(node)] == index[id(node)]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(id(member))
                        component.append(member)
                        if member is node:
                            break
                    components.append(component)
        for component in components:
            members = {id(d) for d in component}
            if len(component) == 1 and not any(t is component[0] for t, _ in component[0].targets):
                continue
            for member in component:
                path, where = self.loop(member, members)
                shown = " -> ".join(d.name if d.file is member.file else d.id for d in path)
                self.problem(member.file, where, f"{member.name}: refers to itself: {shown}", member)

    @staticmethod
    def loop(start: _Decl, members: set[int]) -> tuple[list[_Decl], ast.AST]:
        """The shortest path of references from `start` back to itself, and its first reference's node."""
        parents: dict[int, tuple[_Decl, ast.AST] | None] = {id(start): None}
        queue: list[_Decl] = [start]
        for current in queue:
            for target, node in current.targets:
                if id(target) not in members:
                    continue
                if target is start:
                    path = [current]
                    while (step := parents[id(path[-1])]) is not None:
                        path.append(step[0])
                    path.reverse()  # start ... current
                    second = parents[id(path[1])] if len(path) > 1 else None
                    return [*path, start], (second[1] if second is not None else node)
                if id(target) not in parents:
                    parents[id(target)] = (current, node)
                    queue.append(target)
        return [start, start], start.stmt  # pragma: no cover - a member of a cycle always has a way back

    def left_out(self, decl: _Decl, visiting: tuple[int, ...]) -> bool:
        if decl.out is not None:
            return decl.out
        if decl.broken or decl.rt is None:
            decl.out = True
            return True
        if id(decl) in visiting:  # a cycle, already a problem
            return True
        for target, node in decl.targets:
            if self.left_out(target, (*visiting, id(decl))):
                shown = target.name if target.file is decl.file else target.id
                self.problem(decl.file, node, f"{decl.name}: left out: it refers to {shown}, which is left out", decl)
                decl.out = True
                return True
        decl.out = False
        return False

    def result(self, decl: _Decl) -> DeclaredResource:
        assert decl.rt is not None
        refs = tuple(dict.fromkeys(target.id for target, _ in decl.targets))
        target = decl.stmt.targets[0]
        return DeclaredResource(id=decl.id, type=decl.rt.key, name=decl.name, values=decl.values, references=refs,
                                file=decl.file.rel, line=target.lineno, column=target.col_offset + 1)
