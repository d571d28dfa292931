"""What reading the data files answers: the resources declared, each problem at `file:line:column`,
and which files are data files."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connectors.operations import Connector, resource_types
from connectors.resources import ResourceType, plain_value
from runs.declarations import BUILTIN_TYPES


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


def types_of(connectors: Sequence[Connector]) -> dict[str, ResourceType]:
    """The resource types a data file may declare: the connectors' and sanoma's own."""
    return {**resource_types(list(connectors)), **BUILTIN_TYPES}
