"""The outline of a workflow: what its `run` does, read from its file with `ast` (never run).

The outline is a tree of nodes: `op` (a `ctx.<vendor>.<resource>.<op>(...)` or a collection's
`ctx.data.<name>.<op>(...)` call), `approval`, `sleep`, `message` (`ctx.wait_message`), `child`
(`ctx.start_run` / `ctx.wait_run`), `all` (a branch per member), `each` (a `for` loop or a
comprehension), `repeat` (a `while` loop), `branch` (if/elif/else, match, `x if c else y`,
`and`/`or`: a case per arm that does something, plus an empty case for the way past), `try` (its
body, its handlers, its `else`) and `helper` (a call of a function of the same file that takes
ctx: its calls, drawn inside it). A list of nodes may end early: a `return` or `raise` ends the
run (or the helper, or the ctx.all member) there, a `break` or `continue` its loop's turn. Code
that calls nothing through `ctx` is left out; `ctx.now()` and `ctx.tag()` have no effect the
outline would show, so they are not drawn, but they are call sites like any other.

The outline is also a contract: `run` may only hold what the outline can draw. `outline_problems`
lists every place it cannot (ctx stored, reached with getattr or handed to what the outline cannot
read, a call through a variable, recursion, a `raise` outside an `except`, ctx in a `finally`,
code after a return, ...), each with file, line, column and why. At run time `check_call` holds
each ctx call to the outline: a call from a place the outline does not show (a helper in another
file) is refused before the policy or the vendor sees it.

Columns are 1-based and count UTF-16 code units, like the rest of sanoma's file positions; an
`end_column` is the column just past the node's last character. Plain Python: importable without
Django.

The parts: `model` (the data), `reading` (file to outline) over `builder` (one function's reader:
`statements`, `expressions`, `helpers`), `sites` (placing a call at run time), `definitions` (a
workflow's outline, its problems, the run-time check), `as_json`.
"""
from __future__ import annotations

from runs.config.outline.as_json import node_as_json, outline_as_json
from runs.config.outline.definitions import (
    call_in_outline,
    check_call,
    config_problems,
    outline_of,
    outline_problems,
    site_of,
)
from runs.config.outline.model import (
    CALL_NOT_IN_OUTLINE,
    DRAWN_BUILTINS,
    ENDS,
    NODE_KINDS,
    UNDRAWN_BUILTINS,
    CallSite,
    Node,
    Outline,
    OutlineProblem,
    Section,
    Span,
)
from runs.config.outline.reading import outline_of_source, outlines_in_source
from runs.config.outline.sites import CallSites

__all__ = [
    "CALL_NOT_IN_OUTLINE",
    "DRAWN_BUILTINS",
    "ENDS",
    "NODE_KINDS",
    "UNDRAWN_BUILTINS",
    "CallSite",
    "CallSites",
    "Node",
    "Outline",
    "OutlineProblem",
    "Section",
    "Span",
    "call_in_outline",
    "check_call",
    "config_problems",
    "node_as_json",
    "outline_as_json",
    "outline_of",
    "outline_of_source",
    "outline_problems",
    "outlines_in_source",
    "site_of",
]
