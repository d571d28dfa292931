"""From a file's text to an outline: find `run`, read it (and the helpers it calls), number the
nodes and place the call sites."""
from __future__ import annotations

import ast
import io
import tokenize

from runs.config.outline.base import FUNCTIONS, Draft, HelperKey, Shared
from runs.config.outline.builder import Builder
from runs.config.outline.helpers import top_level_functions
from runs.config.outline.model import CallSite, Node, Outline, OutlineProblem, Section
from runs.config.outline.sites import CallSites, Position


def _end(call: ast.Call) -> Position:
    return (call.end_lineno or call.lineno, call.end_col_offset or 0)


class _Freezer:
    """Numbers the drafts into nodes and keys each ctx call at its place: a helper's body is frozen
    at every place that calls it, its calls keyed by the chain of helper calls that led there."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self.sites: dict[Position, CallSite] = {}
        self.chained: dict[tuple[Position, ...], CallSite] = {}
        self.lines: set[int] = set()

    def freeze(self, draft: Draft, path: str, chain: tuple[Position, ...] = ()) -> Node:
        inner_chain = (*chain, _end(draft.at)) if draft.helper is not None and isinstance(draft.at, ast.Call) \
            else chain
        sections = []
        for index, sec in enumerate(draft.sections):
            inner = f"{path}.{index}"
            nodes = tuple(self.freeze(node, f"{inner}.{j}", inner_chain) for j, node in enumerate(sec.nodes))
            sections.append(Section(sec.role, inner, sec.label, nodes, sec.ends))
        node = Node(draft.kind, path, self.shared.span(draft.at), dict(draft.info), tuple(sections))
        if draft.call is not None and isinstance(draft.at, ast.Call):
            self.site(draft.at, draft.call, path, chain)
        return node

    def site(self, call: ast.Call, name: str, path: str | None, chain: tuple[Position, ...] = ()) -> None:
        found = CallSite(self.shared.file, self.shared.span(call), name, path)
        if chain:
            self.chained.setdefault((*chain, _end(call)), found)
        else:
            self.sites.setdefault(_end(call), found)
        self.lines.update(range(call.lineno, (call.end_lineno or call.lineno) + 1))

    def helper_sites(self) -> None:
        """The ctx.now() and ctx.tag() calls inside helpers: no node, a site at every chain of helper
        calls that reaches the helper."""
        chains: dict[HelperKey, set[tuple[Position, ...]]] = {}

        def chains_of(key: HelperKey) -> set[tuple[Position, ...]]:
            if key not in chains:
                chains[key] = set()  # recursion is refused (and not recorded): this only stops a loop
                found: set[tuple[Position, ...]] = set()
                for caller, call, called in self.shared.calls:
                    if called == key:
                        found |= {(_end(call),)} if caller is None else {(*c, _end(call)) for c in chains_of(caller)}
                chains[key] = found
            return chains[key]

        for key, helper in self.shared.helpers.items():
            for chain in sorted(chains_of(key)):
                for call, name in helper.undrawn:
                    self.site(call, name, None, chain)


def _find_function(tree: ast.Module, name: str, line: int | None
                   ) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | None:
    found: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda] = []
    for node in ast.walk(tree):
        if isinstance(node, FUNCTIONS) and node.name == name:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if line is None or line in (first, node.lineno):
                found.append(node)
        elif isinstance(node, ast.Lambda) and name == "<lambda>" and node.lineno == line:
            found.append(node)
    if not found:
        return None
    top = [node for node in found if node in tree.body]
    return (top or found)[0]


def read_source(file: str) -> str:
    """A Python file's text, decoded as Python decodes it, with `\\n` line ends."""
    with open(file, "rb") as handle:
        data = handle.read()
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")


def empty_outline(file: str | None, workflow: str | None, function: str | None, problem: OutlineProblem | None
                  ) -> Outline:
    return Outline(workflow, file, function, None, (), (problem,) if problem else (),
                   CallSites(file or "", {}, frozenset()))


def outline_of_source(source: str, function_name: str, file: str = "<source>", *, line: int | None = None,
                      workflow: str | None = None) -> Outline:
    """The outline of the function `function_name` (first line `line`, when given) in `source`."""
    source = source.replace("\r\n", "\n").replace("\r", "\n")
    try:
        tree = ast.parse(source, filename=file)
    except SyntaxError as err:
        return empty_outline(file, workflow, function_name,
                             OutlineProblem(file, err.lineno or 1, (err.offset or 0) or 1, f"syntax: {err.msg}"))
    fn = _find_function(tree, function_name, line)
    if fn is None:
        where = f" at line {line}" if line is not None else ""
        return empty_outline(file, workflow, function_name, OutlineProblem(
            file, line or 1, 1, f"run ({function_name}) is not in {file}{where}: the outline is read from the "
                                "workflow's file (has it changed since it was loaded?)"))
    shared = Shared(source, file, source.split("\n"), fn, *top_level_functions(tree))
    builder = Builder(shared, fn, "", None)
    drafts = builder.build()
    freezer = _Freezer(shared)
    nodes = tuple(freezer.freeze(draft, str(index)) for index, draft in enumerate(drafts))
    for call, name in builder.undrawn:
        freezer.site(call, name, None)
    freezer.helper_sites()
    problems = sorted(set(shared.problems), key=lambda p: (p.line, p.column, p.message))
    helpers = tuple(sorted({(key[0].name, key[0].lineno, key[0].end_lineno or key[0].lineno)
                            for key in shared.helpers}, key=lambda h: h[1]))
    sites = CallSites(file, freezer.sites, frozenset(freezer.lines), freezer.chained, helpers)
    return Outline(workflow, file, function_name, shared.span(fn), nodes, tuple(problems), sites)


def outlines_in_source(source: str, file: str = "<source>") -> list[Outline]:
    """The outline of each `define_workflow(..., run=...)` in a file's text, without importing it
    (for a lint): `run=` a function's name or a lambda; one outline with the problem for a syntax error."""
    source = source.replace("\r\n", "\n").replace("\r", "\n")
    try:
        tree = ast.parse(source, filename=file)
    except SyntaxError:
        return [outline_of_source(source, "run", file)]
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called = node.func
        if not (isinstance(called, ast.Name) and called.id == "define_workflow"
                or isinstance(called, ast.Attribute) and called.attr == "define_workflow"):
            continue
        keywords = {kw.arg: kw.value for kw in node.keywords if kw.arg}
        name = keywords.get("name")
        workflow = name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else None
        run = keywords.get("run")
        if isinstance(run, ast.Name):
            found.append(outline_of_source(source, run.id, file, workflow=workflow))
        elif isinstance(run, ast.Lambda):
            found.append(outline_of_source(source, "<lambda>", file, line=run.lineno, workflow=workflow))
    return sorted(found, key=lambda o: o.span.line if o.span else 0)
