"""Reading the company's data files: what its vendors should hold, declared as Python, never run.

Data files are `resources/**/*.py` under the config root and `apps/<app>/resources/**/*.py` (files
named `_*` or `test_*` are skipped). They are read with `ast`; nothing in them is imported or run.
A data file holds, besides a docstring (and a string under an assignment, documenting it):

    from company.vendors.shop import shop                  # a connector, from the module defining it
    from runs.authoring import group, person, secret       # sanoma's own: also local
    from changes.datafiles import sanoma                   # or sanoma.person(...), sanoma.group(...)
    from company.resources.people import alice             # a resource another data file declares

    mug = shop.product(sku="mug", title="Mug", price_cents=1500, tags=["kitchen"])
    alice_support = shop.staff_role(user=alice, role="support")
    orders_hook = shop.webhook(url="https://hooks.example.com/orders", events=["order.paid"],
                               signing_secret=secret("SHOP_WEBHOOK_SECRET"))

A value is a literal (a string, a number, True/False/None, a list, a tuple, a dict with string
keys), a reference (a bare name declared in this file, in any order, or imported from another data
file), or `secret("NAME")`. Anything else is a `FileProblem` at `file:line:column` saying what to
write instead; the resource it is in is left out, and so is every resource referring to it,
transitively; the others still load. A connector is imported from any module, by the name that
module binds it to; it must be one of the config's connectors.

A resource's id is `<file path from the root>#<name>`: `resources/products.py#mug`.
"""
from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from connectors.operations import Connector
from connectors.resources import ResourceType
from runs.config.datafiles.references import _References
from runs.config.datafiles.results import DataFiles, DeclaredResource, FileProblem, data_files
from runs.config.datafiles.state import (
    FRONT_DOOR,
    RUNTIME_FUNCTIONS,
    RUNTIME_MODULE,
    RUNTIME_PACKAGE,
    WHAT_A_FILE_HOLDS,
    WHAT_TO_IMPORT,
    _Binding,
    _Decl,
    _File,
)
from runs.config.datafiles.values import _Values


def read_datafiles(
    root: Path | str,
    types: Mapping[str, ResourceType] | Iterable[Connector],
    *,
    package: str | None = None,
) -> DataFiles:
    """Read every data file under `root` against the resource types: the config's connectors, or a
    mapping `"vendor.type" -> ResourceType`. `package` is the root's import name (its folder's name
    unless given). sanoma's own `sanoma.person` and `sanoma.group` are always there."""
    return _Reader(Path(root), types, package).read()


class _Reader(_Values, _References):
    """Reads every data file in phases: statements and names, types and values, references, the whole set."""

    # the read

    def read(self) -> DataFiles:
        for index, path in enumerate(data_files(self.root)):
            rel = path.relative_to(self.root).as_posix()
            module = ".".join((self.package, *path.relative_to(self.root).with_suffix("").parts))
            file = _File(index, path, rel, module)
            self.files.append(file)
            self.modules[module] = file
        trees = [(file, self.parse(file)) for file in self.files]
        for file, tree in trees:
            if tree is not None:
                self.collect(file, tree)
        for file in self.files:
            self.check_imports(file)
        for file in self.files:
            for decl in file.decls:
                self.evaluate(decl)
        for file in self.files:
            for decl in file.decls:
                self.link(decl)
        for file in self.files:
            for decl in file.decls:
                self.declare(decl)
        self.duplicates()
        self.cycles()
        kept: list[DeclaredResource] = []
        for file in self.files:
            for decl in file.decls:
                if not self.left_out(decl, ()):
                    kept.append(self.result(decl))
        order = {file.rel: file.index for file in self.files}
        problems = sorted(self.problems, key=lambda p: (order.get(p.file, -1), p.line, p.column))
        return DataFiles(root=self.root, files=tuple(f.rel for f in self.files), resources=tuple(kept),
                         problems=tuple(problems))

    def parse(self, file: _File) -> ast.Module | None:
        try:
            source = file.path.read_text(encoding="utf-8")
            return ast.parse(source, filename=str(file.path))
        except SyntaxError as err:
            self.problems.append(FileProblem(file.rel, err.lineno or 1, err.offset or 1,
                                             f"the file is not valid Python: {err.msg}; nothing in it is read"))
        except (OSError, UnicodeDecodeError, ValueError) as err:
            self.problems.append(FileProblem(file.rel, 1, 1, f"the file cannot be read: {err}; nothing in it is read"))
        return None

    # phase 1: statements and names

    def collect(self, file: _File, tree: ast.Module) -> None:
        for index, stmt in enumerate(tree.body):
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                    and isinstance(stmt.value.value, str):
                if index == 0 or isinstance(tree.body[index - 1], ast.Assign):
                    continue  # the module's docstring, or one documenting the assignment above it
                self.problem(file, stmt, "a lone string does nothing here: write a comment (# ...) instead")
            elif isinstance(stmt, ast.ImportFrom):
                self.collect_import(file, stmt)
            elif isinstance(stmt, ast.Import):
                names = ", ".join(alias.name for alias in stmt.names)
                self.problem(file, stmt, f"`import {names}`: a data file is read, not run, so a module is of no use "
                                         f"in it; {WHAT_TO_IMPORT}")
            elif isinstance(stmt, ast.Assign):
                self.collect_assignment(file, stmt)
            elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
                self.problem(file, stmt, f"{WHAT_A_FILE_HOLDS}: write `name = vendor.type(...)` without an "
                                         f"annotation or operator")
            elif isinstance(stmt, ast.Expr):
                self.problem(file, stmt, f"`{self.spelled(stmt.value)}` on its own line is code, and a data file is "
                                         f"read, not run: {WHAT_A_FILE_HOLDS}")
            else:
                what = type(stmt).__name__.lower().replace("functiondef", "def").replace("classdef", "class")
                self.problem(file, stmt, f"a `{what}` statement is code, and a data file is read, not run: "
                                         f"{WHAT_A_FILE_HOLDS}; write each resource out")

    def bind(self, file: _File, name: str, binding: _Binding) -> None:
        earlier = file.bindings.get(name)
        if earlier is not None:
            line = getattr(earlier.node, "lineno", "?")
            self.problem(file, binding.node, f"{name} is bound twice in this file (first at line {line}): "
                                             f"give each its own name", binding.decl)
            return
        file.bindings[name] = binding

    def collect_import(self, file: _File, stmt: ast.ImportFrom) -> None:
        module = stmt.module or ""
        if stmt.level:
            self.problem(file, stmt, f"relative import: write the module in full, "
                                     f"from {self.package}.resources.<file> import <name>")
            return
        for alias in stmt.names:
            local = alias.asname or alias.name
            if alias.name == "*":
                self.problem(file, stmt, f"`from {module} import *`: import each name you use, "
                                         f"from {module} import a, b")
                continue
            if module == RUNTIME_PACKAGE and alias.name == "sanoma":
                self.bind(file, local, _Binding("runtime", alias))
            elif module in (RUNTIME_MODULE, FRONT_DOOR):
                if alias.name in RUNTIME_FUNCTIONS:
                    self.bind(file, local, _Binding("function", alias, function=alias.name))
                elif module == FRONT_DOOR:
                    self.refuse(file, local, alias, f"`from {module} import {alias.name}`: a data file is read, "
                                                    f"not run; from {module} it takes only "
                                                    f"{', '.join(RUNTIME_FUNCTIONS)}")
                else:
                    self.refuse(file, local, alias, f"{RUNTIME_MODULE} has no {alias.name}: it offers "
                                                    f"{', '.join(RUNTIME_FUNCTIONS)}")
            elif module in self.modules:
                self.bind(file, local, _Binding("import", alias, module=module, attr=alias.name))
            else:
                vendor = self.connector_of(module, alias.name)
                if vendor is not None:
                    self.bind(file, local, _Binding("connector", alias, vendor=vendor))
                elif ".resources" in f".{module}" and module.startswith(f"{self.package}."):
                    self.refuse(file, local, alias, f"{module} is not a data file here: the data files are "
                                                    f"{', '.join(sorted(self.modules)) or 'none'}")
                else:
                    self.refuse(file, local, alias, f"`from {module} import {alias.name}`: {alias.name} is neither "
                                                    f"a connector of the config nor a resource; {WHAT_TO_IMPORT}")

    def refuse(self, file: _File, local: str, node: ast.AST, message: str) -> None:
        self.problem(file, node, message)
        self.bind(file, local, _Binding("refused", node))

    def connector_of(self, module: str, name: str) -> str | None:
        """The vendor of the connector `from module import name` binds, if it is one of the config's."""
        loaded = sys.modules.get(module)
        if loaded is not None:
            found = getattr(loaded, name, None)
            if isinstance(found, Connector) and found.vendor in self.vendors:
                return found.vendor
            return None
        return name if name in self.vendors else None

    def collect_assignment(self, file: _File, stmt: ast.Assign) -> None:
        if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
            self.problem(file, stmt, f"{WHAT_A_FILE_HOLDS}: one name on the left, e.g. mug = shop.product(...)")
            return
        decl = _Decl(file, stmt.targets[0].id, stmt)
        file.decls.append(decl)
        self.bind(file, decl.name, _Binding("decl", stmt.targets[0], decl=decl))
