"""A workflow definition's outline (read once per definition), its problems as config problems,
and holding each ctx call to it at run time."""
from __future__ import annotations

import threading
import weakref
from pathlib import Path
from types import CodeType, FrameType

from connectors.errors import Problem, ProblemKind
from runs.config.outline.model import CallSite, Outline, OutlineProblem
from runs.config.outline.reading import empty_outline, outline_of_source, read_source
from runs.config.workflows import WorkflowDefinition

_CACHE: weakref.WeakKeyDictionary[WorkflowDefinition, Outline] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def outline_of(definition: WorkflowDefinition) -> Outline:
    """The workflow's outline, read from the file its `run` is defined in; computed once per definition."""
    outline = _CACHE.get(definition)
    if outline is not None:
        return outline
    outline = _outline(definition)
    with _LOCK:
        return _CACHE.setdefault(definition, outline)


def _outline(definition: WorkflowDefinition) -> Outline:
    run = definition.run
    code = getattr(run, "__code__", None)
    name = getattr(run, "__name__", None)
    if not isinstance(code, CodeType) or not isinstance(name, str):
        file = definition.file or "<unknown>"
        return empty_outline(definition.file, definition.name, None, OutlineProblem(
            file, 1, 1, f'run of workflow "{definition.name}" is not a function defined with def or lambda, '
                        "so the outline cannot be read"))
    file = code.co_filename
    try:
        source = read_source(file)
    except (OSError, UnicodeDecodeError, SyntaxError) as err:
        return empty_outline(file, definition.name, name, OutlineProblem(
            file, code.co_firstlineno, 1, f'the file of workflow "{definition.name}" cannot be read ({err}): '
                                          "its outline is read from it"))
    return outline_of_source(source, name, file, line=code.co_firstlineno, workflow=definition.name)


def outline_problems(definition: WorkflowDefinition) -> list[OutlineProblem]:
    """Why the workflow's outline cannot be drawn; empty when it can. Built-in workflows (sanoma's
    own `drift`, `apply`, ...) are not held to the contract."""
    if definition.builtin:
        return []
    return list(outline_of(definition).problems)


def config_problems(definition: WorkflowDefinition, root: Path | None = None,
                    kind: ProblemKind = ProblemKind.OTHER) -> list[Problem]:
    """`outline_problems` as config problems: the file relative to `root` (when under it) and the line."""
    problems = []
    for found in outline_problems(definition):
        file = found.file
        if root is not None:
            try:
                file = str(Path(found.file).resolve().relative_to(Path(root).resolve()))
            except ValueError:
                pass
        problems.append(Problem(f'Workflow "{definition.name}" at {file}:{found.line}:{found.column}: '
                                f"{found.message}", kind=kind, file=file, line=found.line))
    return problems


# ---- at run time --------------------------------------------------------------------------------

def site_of(definition: WorkflowDefinition, frame: FrameType) -> CallSite | None:
    """The outline's ctx call `frame` is making (the frame of the workflow code that called ctx), or None."""
    return outline_of(definition).sites.at(frame)


def call_in_outline(definition: WorkflowDefinition, where: FrameType | tuple[str, int],
                    call: str | None = None) -> bool:
    """Whether a ctx call made from `where` is one the outline shows: a frame (exact: the call
    expression it is executing, and for a call inside a helper the helper calls that led there), or
    `(filename, line)` (coarse: a ctx call of the outline spans that line). With `call`
    (`shop.order.get`, `approval`, ...) the site must call that too. Built-in workflows are not held
    to their outline."""
    if definition.builtin:
        return True
    sites = outline_of(definition).sites
    if isinstance(where, tuple):
        filename, line = where
        if not sites.has_line(filename, line):
            return False
        return call is None or any(s.call == call and s.span.line <= line <= s.span.end_line for s in sites)
    site = sites.at(where)
    return site is not None and (call is None or site.call == call)


def _position(frame: FrameType) -> tuple[int | None, ...] | None:
    """(line, end line, column, end column) of the instruction `frame` is executing; columns are 0-based UTF-8."""
    index = frame.f_lasti // 2
    for found, position in enumerate(frame.f_code.co_positions()):
        if found == index:
            return position
    return None


def check_call(definition: WorkflowDefinition, frame: FrameType, call: str) -> str | None:
    """None when the ctx call `call` made by `frame` is in the outline; else why not (the message of
    a `call_not_in_outline` failure)."""
    if definition.builtin:
        return None
    sites = outline_of(definition).sites
    site = sites.at(frame)
    if site is not None and site.call == call:
        return None
    code = frame.f_code
    position = _position(frame)
    line = position[0] if position is not None and position[0] is not None else frame.f_lineno
    column = position[2] + 1 if position is not None and position[2] is not None else 1
    where = f"{code.co_filename}:{line}:{column}"
    direct = (f"call ctx directly in run, or in a function of the same file that run calls with ctx "
              f"({sites.file})")
    if site is not None:
        return (f"ctx.{call} was called from {where}, where the outline of workflow \"{definition.name}\" shows "
                f"ctx.{site.call}: {direct}")
    if code.co_filename != sites.file:
        return (f"ctx.{call} was called from {where}, which is not in the file of workflow \"{definition.name}\", "
                f"so its outline does not show it: {direct}")
    return (f"ctx.{call} was called from {where} ({code.co_name}), which the outline of workflow "
            f"\"{definition.name}\" does not show: {direct}")
