"""What an outline is made of: nodes, their sections, spans, problems and call sites (plain data)."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runs.config.outline.sites import CallSites

# The built-ins the outline draws, and the node kind each one is.
DRAWN_BUILTINS = {
    "approval": "approval",
    "sleep": "sleep",
    "wait_message": "message",
    "start_run": "child",
    "wait_run": "child",
    "all": "all",
}
# Built-ins called through ctx that change nothing the outline shows: call sites, never nodes.
UNDRAWN_BUILTINS = ("now", "tag", "patched", "continue_as_new")
# What may be read from ctx without calling it.
VALUES = ("run_id",)
NODE_KINDS = ("op", "approval", "sleep", "message", "child", "all", "each", "repeat", "branch", "try", "helper")
# How a section may end: the run (or the helper, or the ctx.all member) returns or fails there, or
# the loop around it stops (`break`) or goes on with its next turn (`continue`).
ENDS = ("return", "raise", "break", "continue")
CALL_NOT_IN_OUTLINE = "call_not_in_outline"


@dataclass(frozen=True)
class Span:
    """Where a node is: 1-based line and column (UTF-16 units); the end is just past its last character."""

    line: int
    column: int
    end_line: int
    end_column: int

    def as_json(self) -> dict[str, int]:
        return {"line": self.line, "column": self.column, "end_line": self.end_line, "end_column": self.end_column}


@dataclass(frozen=True)
class Section:
    """One list of nodes inside a node: a loop's body, a branch's case, a try's handler, an all's
    branch, a helper's body.

    `role` is `body`, `case`, `past` (the way through a branch that runs none of its cases),
    `handler`, `orelse` or `member`; `ends` is one of `ENDS` when the section ends that way."""

    role: str
    path: str
    label: str
    nodes: tuple[Node, ...]
    ends: str | None = None


@dataclass(frozen=True)
class Node:
    """One thing the outline draws. `info` holds the kind's own fields (`op`, `title`, `topic`,
    `action`/`workflow`, `label`, a helper's `function`); `sections` the lists of nodes inside it."""

    kind: str
    path: str
    span: Span
    info: Mapping[str, Any] = field(default_factory=dict)
    sections: tuple[Section, ...] = ()

    def walk(self) -> Iterator[Node]:
        yield self
        for section in self.sections:
            for node in section.nodes:
                yield from node.walk()


@dataclass(frozen=True)
class OutlineProblem:
    """A place in `run` (or a helper it calls) the outline cannot draw, and why."""

    file: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message}"

    def as_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "column": self.column, "message": self.message}


@dataclass(frozen=True)
class CallSite:
    """A ctx call the outline shows: where it is, what it calls (`shop.order.get`, `data.notes.put`,
    `approval`, `now`, ...) and its node's path (None for `now` and `tag`, which are not drawn). A
    call inside a helper drawn at several places is a site at each, with that place's path."""

    file: str
    span: Span
    call: str
    node: str | None


@dataclass(frozen=True)
class Outline:
    """A workflow's outline: its nodes in program order, what stops it being drawn, and its call sites."""

    workflow: str | None
    file: str | None
    function: str | None
    span: Span | None
    nodes: tuple[Node, ...]
    problems: tuple[OutlineProblem, ...]
    sites: CallSites

    def walk(self) -> Iterator[Node]:
        """Every node, depth first in program order (a helper's nodes inside its node)."""
        for node in self.nodes:
            yield from node.walk()
