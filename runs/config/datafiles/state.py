"""What the data-file reader keeps while reading: the files, the names each binds, the declarations
and their values, and the problems found so far. The reader's phases share it."""
from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connectors.operations import Connector, resource_types
from connectors.resources import ResourceType
from runs.config.datafiles.results import FileProblem
from runs.declarations import BUILTIN_TYPES

# What a data file writes to reach sanoma's own names (besides the front door): the package and module
# data files have always imported them from, `changes.datafiles.sanoma`.
RUNTIME_PACKAGE = "changes.datafiles"
RUNTIME_MODULE = "changes.datafiles.sanoma"
# The front door offers the same functions; a data file may take them from either.
FRONT_DOOR = "runs.authoring"
RUNTIME_FUNCTIONS = ("group", "local", "person", "secret")
WHAT_TO_IMPORT = ("import connectors from their module (from company.vendors.shop import shop), resources from "
                  "other data files (from company.resources.people import alice), and secret, person, group and "
                  "local from runs.authoring (or: from changes.datafiles import sanoma)")
WHAT_A_FILE_HOLDS = "a data file holds imports and declarations `name = vendor.type(field=value, ...)`"


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


class _ReaderState:
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


    def problem(self, file: _File, node: ast.AST, message: str, decl: _Decl | None = None) -> None:
        line = getattr(node, "lineno", 1) or 1
        column = (getattr(node, "col_offset", 0) or 0) + 1
        self.problems.append(FileProblem(file.rel, line, column, message, decl.id if decl else None))
        if decl is not None:
            decl.broken = True
