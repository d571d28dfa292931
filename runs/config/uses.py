"""What a workflow uses: derived from its outline, or, where `uses` is given, checked against it.

The outline (`runs.config.outline`) draws every ctx call `run` makes. A workflow defined without
`uses` gets them all: its operations (`shop.order.get`, `data.notes.put`) and built-ins
(`approval`, `sleep`, `all`, `wait_message`, `start_run`, `wait_run`); `now` and `tag` need no
listing. A workflow that gives `uses` keeps it as a limit, and every call the list lacks is a
problem at the call's file and line, so `check`, the worker and every command refuse it before a
run meets it.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

from connectors.errors import Problem, ProblemKind
from runs.config.outline import UNDRAWN_BUILTINS, CallSite, outline_of
from runs.config.workflows import BUILTIN_USES, WorkflowDefinition


def calls_of(definition: WorkflowDefinition) -> dict[str, CallSite]:
    """Each ctx call the outline shows that `uses` covers, by what it calls, at its first site."""
    found: dict[str, CallSite] = {}
    for site in sorted(outline_of(definition).sites, key=lambda s: (s.span.line, s.span.column)):
        if site.call in UNDRAWN_BUILTINS:
            continue
        found.setdefault(site.call, site)
    return found


def complete_uses(definition: WorkflowDefinition, root: Path | None = None) -> list[Problem]:
    """Fill in a derived workflow's `ops` and `builtins` from its outline (once: the outline of a
    definition does not change); for one that lists `uses`, the calls the list lacks, as problems.
    Built-in workflows (`drift`, `apply`, ...) keep their lists unchecked."""
    if definition.builtin:
        return []
    calls = calls_of(definition)
    if definition.derived:
        # The definition is frozen for everyone else; this is its one completion, the same every time.
        object.__setattr__(definition, "ops", tuple(c for c in calls if c not in BUILTIN_USES))
        object.__setattr__(definition, "builtins", tuple(c for c in calls if c in BUILTIN_USES))
        return []
    return [Problem(message, kind=ProblemKind.OPERATIONS, file=file, line=line)
            for file, line, _, message in missing_uses(definition, root)]


def missing_uses(definition: WorkflowDefinition, root: Path | None = None) -> list[tuple[str, int, int, str]]:
    """For a workflow that lists `uses`: each call the list lacks, as (file, line, column, message),
    the file relative to `root`; empty for a derived or built-in workflow."""
    if definition.builtin or definition.derived:
        return []
    listed = {*definition.ops, *definition.builtins}
    found = []
    for call, site in calls_of(definition).items():
        if call in listed:
            continue
        file = _relative(site.file, root)
        shown = f"Ctx.{call}" if call in BUILTIN_USES else call
        found.append((file, site.span.line, site.span.column,
                      f'Workflow "{definition.name}" calls ctx.{call} at {file}:{site.span.line}:{site.span.column}, '
                      f"which its `uses` does not list: add {shown} to uses, or leave uses out (it is then derived "
                      "from the calls)"))
    return found


def site_of_call(definition: WorkflowDefinition, call: str, root: Path | None = None) -> str:
    """` (file:line)` of the first site calling `call`, or "" when the outline does not show one."""
    site = calls_of(definition).get(call) if not definition.builtin else None
    return "" if site is None else f" ({_relative(site.file, root)}:{site.span.line})"


def undeclared_calls(definition: WorkflowDefinition, known: Iterable[str],
                     root: Path | None = None) -> list[tuple[str | None, int | None, int, str]]:
    """Each operation the workflow uses (calls, or lists in `uses`) that no connector declares, as
    (file, line, column, message): at its first call when the outline shows one, else at the
    workflow's file; with the declared operation it is closest to."""
    if definition.builtin:
        return []
    declared = sorted(set(known))
    calls = calls_of(definition)
    found: list[tuple[str | None, int | None, int, str]] = []
    # A derived workflow uses what it calls; one that lists `uses` is checked on the list (a call
    # the list lacks is missing_uses' problem).
    used = [c for c in calls if c not in BUILTIN_USES] if definition.derived else list(definition.ops)
    for op_id in dict.fromkeys(used):
        if op_id in declared:
            continue
        site = calls.get(op_id)
        file = _relative(site.file, root) if site is not None else (
            _relative(definition.file, root) if definition.file else None)
        line = site.span.line if site is not None else None
        verb = "calls" if definition.derived else "uses"
        where = f" ({file}:{line})" if site is not None else ""
        close = difflib.get_close_matches(op_id, declared, n=1, cutoff=0.75)
        hint = f": did you mean {close[0]}?" if close else ""
        found.append((file, line, site.span.column if site is not None else 1,
                      f'Workflow "{definition.name}" {verb} {op_id}{where}, which no connector in the config '
                      f"declares{hint}"))
    return found


def _relative(file: str, root: Path | None) -> str:
    if root is not None:
        try:
            return str(Path(file).resolve().relative_to(Path(root).resolve()))
        except ValueError:
            pass
    return file


__all__ = ["calls_of", "complete_uses", "missing_uses", "site_of_call", "undeclared_calls"]
