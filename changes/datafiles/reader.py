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
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from changes.datafiles.sanoma import BUILTIN_TYPES
from connectors.operations import Connector, resource_types
from connectors.resources import Ref, ResourceType, Secret, plain_value

RUNTIME_PACKAGE = "changes.datafiles"
RUNTIME_MODULE = "changes.datafiles.sanoma"
# The front door offers the same functions; a data file may take them from either.
FRONT_DOOR = "runs.authoring"
RUNTIME_FUNCTIONS = ("group", "local", "person", "secret")
WHAT_TO_IMPORT = ("import connectors from their module (from company.vendors.shop import shop), resources from "
                  "other data files (from company.resources.people import alice), and secret, person, group and "
                  "local from runs.authoring (or: from changes.datafiles import sanoma)")
WHAT_A_FILE_HOLDS = "a data file holds imports and declarations `name = vendor.type(field=value, ...)`"


@dataclass(frozen=True)
class FileProblem:
    """Why something in a data file is left out: `file:line:column: message` (line and column from 1)."""

    file: str
    line: int
    column: int
    message: str
    resource: str | None = None  # the id of the resource left out, when it is about one

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message}"

    def plain(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "column": self.column, "message": self.message,
                "resource": self.resource}


@dataclass(frozen=True)
class DeclaredResource:
    """One declared resource. `values` are its clean declared fields (`Ref` for a reference to
    another resource, `Secret` for `secret("NAME")`); `references` the ids it refers to."""

    id: str
    type: str
    name: str
    values: Mapping[str, Any]
    references: tuple[str, ...]
    file: str
    line: int
    column: int

    def plain(self) -> dict[str, Any]:
        return {"id": self.id, "type": self.type, "name": self.name, "values": plain_value(self.values),
                "references": list(self.references), "file": self.file, "line": self.line, "column": self.column}


@dataclass(frozen=True)
class DataFiles:
    """What the data files declare, in file order (files sorted, then by line), and their problems."""

    root: Path
    files: tuple[str, ...]
    resources: tuple[DeclaredResource, ...]
    problems: tuple[FileProblem, ...]

    def by_id(self) -> dict[str, DeclaredResource]:
        return {r.id: r for r in self.resources}

    def plain(self) -> dict[str, Any]:
        return {"files": list(self.files), "resources": [r.plain() for r in self.resources],
                "problems": [p.plain() for p in self.problems]}


# --- what the reader keeps while reading -------------------------------------------------------


@dataclass(eq=False)
class _Name:
    """A bare name used as a value: a reference, resolved once every file is read."""

    name: str
    node: ast.Name


@dataclass(eq=False)
class _Decl:
    file: _File
    name: str
    stmt: ast.Assign
    rt: ResourceType | None = None
    raw: dict[str, tuple[ast.keyword, Any]] = field(default_factory=dict)
    names: list[_Name] = field(default_factory=list)
    targets: list[tuple[_Decl, ast.AST]] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    broken: bool = False
    out: bool | None = None

    @property
    def id(self) -> str:
        return f"{self.file.rel}#{self.name}"


@dataclass(eq=False)
class _Binding:
    kind: str  # connector | runtime | function | decl | import | refused
    node: ast.AST
    vendor: str = ""
    function: str = ""
    decl: _Decl | None = None
    module: str = ""
    attr: str = ""


@dataclass(eq=False)
class _File:
    index: int
    path: Path
    rel: str
    module: str
    bindings: dict[str, _Binding] = field(default_factory=dict)
    decls: list[_Decl] = field(default_factory=list)


class _Bad:
    """A value that could not be read (its problem is already recorded)."""


_BAD = _Bad()


def data_files(root: Path) -> list[Path]:
    """The data files under `root`: `resources/**/*.py`, then each `apps/<app>/resources/**/*.py`."""
    root = Path(root)
    folders = [root / "resources"]
    apps = root / "apps"
    if apps.is_dir():
        folders += [app / "resources" for app in sorted(apps.iterdir()) if app.is_dir()]
    found: list[Path] = []
    for folder in folders:
        if folder.is_dir():
            found += sorted(p for p in folder.rglob("*.py")
                            if not p.name.startswith(("_", "test_")) and "__pycache__" not in p.parts)
    return found


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


class _Reader:
    def __init__(self, root: Path, types: Mapping[str, ResourceType] | Iterable[Connector],
                 package: str | None) -> None:
        self.root = root.resolve()
        self.package = package or self.root.name
        if isinstance(types, Mapping):
            given = dict(types)
        else:
            given = resource_types(list(types))
        self.types: dict[str, ResourceType] = {**given, **BUILTIN_TYPES}
        self.vendors = {key.split(".")[0] for key in given}
        self.problems: list[FileProblem] = []
        self.files: list[_File] = []
        self.modules: dict[str, _File] = {}

    # problems

    def problem(self, file: _File, node: ast.AST, message: str, decl: _Decl | None = None) -> None:
        line = getattr(node, "lineno", 1) or 1
        column = (getattr(node, "col_offset", 0) or 0) + 1
        self.problems.append(FileProblem(file.rel, line, column, message, decl.id if decl else None))
        if decl is not None:
            decl.broken = True

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

    # phase 2: imports, types and values

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

    def evaluate(self, decl: _Decl) -> None:
        file, value = decl.file, decl.stmt.value
        if not isinstance(value, ast.Call):
            if isinstance(value, (ast.Constant, ast.List, ast.Dict, ast.Tuple, ast.UnaryOp)):
                self.problem(file, value, f"{decl.name} is a constant, and {WHAT_A_FILE_HOLDS}: write the value "
                                          f"where it is used", decl)
            else:
                self.problem(file, value, f"{WHAT_A_FILE_HOLDS}: write {decl.name} = vendor.type(field=value, ...)",
                             decl)
            return
        decl.rt = self.type_of(decl, value.func)
        for arg in value.args:
            self.problem(file, arg, f"give each value by its field name: {self.spelled(value.func)}(field=value)",
                         decl)
        for keyword in value.keywords:
            if keyword.arg is None:
                self.problem(file, keyword, "`**values`: write each field out, field=value", decl)
                continue
            decl.raw[keyword.arg] = (keyword, self.value(decl, keyword.value))

    @staticmethod
    def spelled(func: ast.AST) -> str:
        try:
            return ast.unparse(func)
        except Exception:  # pragma: no cover - unparse takes any expression
            return "vendor.type"

    def type_of(self, decl: _Decl, func: ast.AST) -> ResourceType | None:
        file = decl.file
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            base = func.value.id
            binding = file.bindings.get(base)
            if binding is not None and binding.kind == "connector":
                rt = self.types.get(f"{binding.vendor}.{func.attr}")
                if rt is None:
                    known = sorted(k.split(".", 1)[1] for k in self.types if k.startswith(f"{binding.vendor}."))
                    self.problem(file, func, f"{binding.vendor} has no resource type {func.attr}; its types are "
                                             f"{', '.join(known) or 'none'}", decl)
                return rt
            if binding is not None and binding.kind == "runtime":
                return self.runtime_type(decl, func, func.attr)
            if binding is None:
                self.problem(file, func.value, f"{base} is not imported: import the connector, "
                                               f"e.g. from {self.package}.vendors.{base} import {base}", decl)
            elif binding.kind == "refused":
                self.problem(file, func.value, f"{base} comes from an import that is refused "
                                               f"(line {getattr(binding.node, 'lineno', '?')})", decl)
            else:
                self.problem(file, func.value, f"{base} is not a connector: declare a resource as "
                                               f"name = vendor.type(...), the vendor imported from its module", decl)
            return None
        if isinstance(func, ast.Name):
            binding = decl.file.bindings.get(func.id)
            if binding is not None and binding.kind == "function":
                return self.runtime_type(decl, func, binding.function)
        if isinstance(func, ast.Attribute):
            self.problem(file, func, f"`{self.spelled(func)}`: a resource is declared as vendor.type(...), one "
                                     f"dot: import the connector, from <module> import <vendor>", decl)
        else:
            self.problem(file, func, f"`{self.spelled(func)}(...)` is a call, and a data file is read, not run: "
                                     f"{WHAT_A_FILE_HOLDS}, sanoma.person(...) or sanoma.group(...)", decl)
        return None

    def runtime_type(self, decl: _Decl, node: ast.AST, function: str) -> ResourceType | None:
        if function in ("person", "group", "local"):
            return BUILTIN_TYPES[f"sanoma.{function}"]
        if function == "secret":
            self.problem(decl.file, node, "secret(...) is a value, not a resource: give it to a write-only field, "
                                          "e.g. signing_secret=secret(\"NAME\")", decl)
        else:
            self.problem(decl.file, node, f"sanoma has no {function}: it offers {', '.join(RUNTIME_FUNCTIONS)}", decl)
        return None

    def value(self, decl: _Decl, node: ast.AST) -> Any:
        file = decl.file
        if isinstance(node, ast.Constant):
            if node.value is None or isinstance(node.value, (str, bool, int, float)):
                return node.value
            self.problem(file, node, f"{node.value!r} is not a data file value: write text, a number, "
                                     f"True/False/None, a list or a dict", decl)
            return _BAD
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) \
                and isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float):
            number = node.operand.value
            assert isinstance(number, (int, float))
            return -number if isinstance(node.op, ast.USub) else number
        if isinstance(node, (ast.List, ast.Tuple)):
            items = []
            for item in node.elts:
                if isinstance(item, ast.Starred):
                    self.problem(file, item, "`*items` is computed when the file runs: write the items out", decl)
                    return _BAD
                items.append(self.value(decl, item))
            return items
        if isinstance(node, ast.Dict):
            out: dict[str, Any] = {}
            for key, item in zip(node.keys, node.values, strict=True):
                if key is None:
                    self.problem(file, item, "`**mapping` is computed when the file runs: write the keys out", decl)
                    return _BAD
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                    self.problem(file, key, "a dict's keys are written as text in quotes", decl)
                    return _BAD
                out[key.value] = self.value(decl, item)
            return out
        if isinstance(node, ast.Name):
            name = _Name(node.id, node)
            decl.names.append(name)
            return name
        if isinstance(node, ast.JoinedStr):
            if all(isinstance(part, ast.Constant) for part in node.values):
                return "".join(str(part.value) for part in node.values if isinstance(part, ast.Constant))
            self.problem(file, node, "an f-string with values is computed when the file runs: write the whole text "
                                     "as a plain string", decl)
            return _BAD
        if isinstance(node, ast.Call):
            return self.secret(decl, node)
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            text = self.spelled(node)
            hint = ('; a value kept out of the repo is secret("NAME")' if "environ" in text or "getenv" in text
                    else "")
            self.problem(file, node, f"`{text}` is looked up when the file runs, and a data file is read, not run: "
                                     f"write the value itself{hint}", decl)
            return _BAD
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            self.problem(file, node, "a comprehension is computed when the file runs: write the items out one by one",
                         decl)
            return _BAD
        if isinstance(node, ast.Set):
            self.problem(file, node, "a set: write a list, [a, b] (a field compares it unordered if declared so)",
                         decl)
            return _BAD
        self.problem(file, node, f"`{self.spelled(node)}` is computed when the file runs: write its value itself",
                     decl)
        return _BAD

    def secret(self, decl: _Decl, node: ast.Call) -> Any:
        file, func = decl.file, node.func
        is_secret = False
        if isinstance(func, ast.Name):
            binding = file.bindings.get(func.id)
            is_secret = binding is not None and binding.kind == "function" and binding.function == "secret"
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            binding = file.bindings.get(func.value.id)
            is_secret = binding is not None and binding.kind == "runtime" and func.attr == "secret"
        if not is_secret:
            self.problem(file, node, f"`{self.spelled(func)}(...)` is a call, and a data file is read, not run: "
                                     f"write the value itself (the only call a value may be is secret(\"NAME\"), "
                                     f"from {RUNTIME_MODULE})", decl)
            return _BAD
        if (len(node.args) != 1 or node.keywords or not isinstance(node.args[0], ast.Constant)
                or not isinstance(node.args[0].value, str)):
            self.problem(file, node, 'secret takes one name in quotes: secret("SHOP_WEBHOOK_SECRET")', decl)
            return _BAD
        name = node.args[0].value
        if not name or not name.replace("_", "").isalnum() or not name[0].isalpha() or name.upper() != name:
            self.problem(file, node.args[0], f"a secret's name is upper-case letters, digits and underscores, like an "
                                             f"environment variable: secret(\"{name.upper() or 'NAME'}\")", decl)
            return _BAD
        return Secret(name)

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


def types_of(connectors: Sequence[Connector]) -> dict[str, ResourceType]:
    """The resource types a data file may declare: the connectors' and sanoma's own."""
    return {**resource_types(list(connectors)), **BUILTIN_TYPES}
