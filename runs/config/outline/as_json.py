"""An outline as plain data, for the desk, the API and `describe_config`."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from runs.config.outline.model import Node, Outline, Section


def _section_json(section: Section) -> dict[str, Any]:
    shown: dict[str, Any] = {"path": section.path, "label": section.label, "ends": section.ends,
                             "nodes": [node_as_json(node) for node in section.nodes]}
    if section.role in ("case", "past"):
        shown["past"] = section.role == "past"
    return shown


def node_as_json(node: Node) -> dict[str, Any]:
    """One node as plain data: `kind`, `path`, `span`, the kind's fields, and its sections."""
    shown: dict[str, Any] = {"kind": node.kind, "path": node.path, "span": node.span.as_json(), **node.info}
    by_role: dict[str, list[dict[str, Any]]] = {}
    for section in node.sections:
        by_role.setdefault(section.role, []).append(_section_json(section))
    if node.kind in ("each", "repeat", "helper"):
        shown["body"] = by_role["body"][0]
    elif node.kind == "all":
        shown["branches"] = by_role.get("member", [])
    elif node.kind == "branch":
        shown["cases"] = [_section_json(section) for section in node.sections]
    elif node.kind == "try":
        shown["body"] = by_role["body"][0]
        shown["handlers"] = by_role.get("handler", [])
        shown["orelse"] = by_role["orelse"][0] if "orelse" in by_role else None
    return shown


def outline_as_json(outline: Outline, root: Path | None = None) -> dict[str, Any]:
    """The outline as plain dicts for the desk and describe_config; `file`s relative to `root` when under it."""
    def relative(file: str | None) -> str | None:
        if file is None or root is None:
            return file
        try:
            return str(Path(file).resolve().relative_to(Path(root).resolve()))
        except ValueError:
            return file

    return {
        "workflow": outline.workflow,
        "file": relative(outline.file),
        "function": outline.function,
        "span": outline.span.as_json() if outline.span else None,
        "nodes": [node_as_json(node) for node in outline.nodes],
        "problems": [{**problem.as_json(), "file": relative(problem.file)} for problem in outline.problems],
    }
