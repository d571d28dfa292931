"""Linting a config root: its workflow files, its policies and its data files.

- Workflow files (`workflows/**/*.py`, `apps/<app>/workflows/**/*.py`, helpers included; `test_*`
  files left to the tests) are read with `ast`: see `runs.config.lint.workflows`. They are never run.
- Once `sanoma_config.py` imports, the workflows are imported too (as the worker imports them), so
  that a workflow listing `uses` is checked against the calls its outline draws: a call the list
  lacks is a problem at the call (`uses`).
- Policies (`policies/*.cedar`) are loaded as the worker loads them; each problem the loader
  reports is placed at its file and the line where the policy starts. Once they load, an action or
  operation they name that no connector declares (the config's, its collections', the built-in
  ones) is a problem at its line, and so is an `@approve` naming nobody: no person or group the
  data files declare, no user or group of the site (read when the database can be; see
  `runs.policies.approvers`).
- Data files (`resources/**/*.py`, `apps/<app>/resources/**/*.py`) are read by the data-file reader
  against the config's connectors (from `sanoma_config.py`, imported for their resource types, as
  `manage.py resources` does); their problems are the reader's.

`paths` limits which files' problems are reported (files, or folders holding them); the data files
and the policies are still read together, since they refer to one another.
"""
from __future__ import annotations

import ast
import importlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connectors.errors import ConfigError
from connectors.operations import Connector
from runs.collections.definition import data_connector
from runs.config import extensions
from runs.config.datafiles import data_files, read_datafiles
from runs.config.discovery import discover_collections, discover_workflows, failure_line, import_root, kind_dirs
from runs.config.lint.problems import LintProblem
from runs.config.lint.workflows import Allowed, lint_workflow
from runs.config.resolution import ENGINE_OPS, SanomaConfig
from runs.config.uses import missing_uses, undeclared_calls
from runs.config.workflows import WorkflowDefinition
from runs.policies.approvers import approver_problems
from runs.policies.cedar import load_cedar_policy

CONFIG_FILE = "sanoma_config.py"
SCOPE = ("workflows/**/*.py, apps/<app>/workflows/**/*.py, policies/*.cedar and the data files "
         "(resources/**/*.py, apps/<app>/resources/**/*.py)")


class LintError(ValueError):
    """The lint cannot start: a path that is not there, or holds nothing the lint reads."""


@dataclass(frozen=True)
class LintReport:
    root: Path
    files: tuple[str, ...]  # every file linted, relative to the root
    problems: tuple[LintProblem, ...]  # sorted by file, line, column

    @property
    def files_with_problems(self) -> tuple[str, ...]:
        return tuple(sorted({p.file for p in self.problems}))

    def plain(self) -> dict[str, Any]:
        return {"root": str(self.root), "files": list(self.files),
                "problems": [p.plain() for p in self.problems]}


def workflow_files(root: Path) -> list[Path]:
    """The Python files under the root's `workflows/` and each app's (helpers too; not `test_*`)."""
    found: list[Path] = []
    for folder in kind_dirs(root, "workflows"):
        if folder.is_dir():
            found += sorted(p for p in folder.rglob("*.py")
                            if p.is_file() and "__pycache__" not in p.parts
                            and not p.name.startswith("test_") and p.name != "conftest.py")
    return found


def policy_files(root: Path) -> list[Path]:
    """The Cedar files the policy loader reads: `policies/*.cedar`."""
    folder = root / "policies"
    return sorted(p for p in folder.glob("*.cedar") if p.is_file()) if folder.is_dir() else []


def lint_paths(root: Path | str, paths: Sequence[Path | str] | None = None, *,
               connectors: Iterable[Connector] | None = None) -> list[LintProblem]:
    """Every problem in the config root's workflows, policies and data files (or those under `paths`)."""
    return list(lint(root, paths, connectors=connectors).problems)


def lint(root: Path | str, paths: Sequence[Path | str] | None = None, *,
         connectors: Iterable[Connector] | None = None) -> LintReport:
    """Lint the config root. `connectors` are the resource types the data files are read against;
    when not given, they are the ones `sanoma_config.py` lists (imported only when there are data
    files to read). Raises `LintError` for a path that is missing or holds nothing to lint."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise LintError(f"{root} is not a folder: the lint reads a config root")
    flows, policies, datas = workflow_files(root), policy_files(root), data_files(root)
    chosen = _select(root, paths, [*flows, *policies, *datas])

    def rel(path: Path) -> str:
        return path.relative_to(root).as_posix()

    problems: list[LintProblem] = []
    chosen_flows = [p for p in flows if p in chosen]
    if chosen_flows:
        modules, collections = _connector_modules(root), _config_collections(root)
        for path in chosen_flows:
            problems += _lint_workflow_file(root, path, rel(path), modules, collections)
        chosen_names = {rel(p) for p in chosen_flows}
        problems += [p for p in _uses_problems(root) if p.file in chosen_names]
    chosen_policies = {rel(p) for p in policies if p in chosen}
    if chosen_policies:
        problems += [p for p in _policy_problems(root) if p.file in chosen_policies]
    chosen_datas = {rel(p) for p in datas if p in chosen}
    if chosen_datas:
        loaded, trouble = (list(connectors), None) if connectors is not None else _config_connectors(root)
        if trouble is not None:
            problems.append(trouble)
        if loaded is not None:
            read = read_datafiles(root, loaded)
            problems += [LintProblem(p.file, p.line, p.column, p.message, "data-file")
                         for p in read.problems if p.file in chosen_datas]
    files = tuple(sorted(rel(p) for p in chosen))
    return LintReport(root=root, files=files, problems=tuple(sorted(set(problems))))


def _select(root: Path, paths: Sequence[Path | str] | None, candidates: list[Path]) -> set[Path]:
    if not paths:
        return set(candidates)
    chosen: set[Path] = set()
    for given in paths:
        path = Path(given).resolve()
        if not path.exists():
            raise LintError(f"{given}: no such file or folder")
        picked = {c for c in candidates if c == path or path in c.parents}
        if not picked:
            raise LintError(f"{given} holds no file the lint reads: under the config root {root}, it reads {SCOPE}")
        chosen |= picked
    return chosen


def _lint_workflow_file(root: Path, path: Path, rel: str, modules: frozenset[str],
                        collections: frozenset[str]) -> list[LintProblem]:
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        return [LintProblem(rel, 1, 1, f"the file cannot be read: {err}", "syntax")]
    parts = path.relative_to(root).with_suffix("").parts
    is_package = parts[-1] == "__init__"
    module = ".".join((root.name, *(parts[:-1] if is_package else parts)))
    return lint_workflow(rel, source, Allowed(package=root.name, module=module, is_package=is_package,
                                              connector_modules=modules, config_collections=collections))


def _connector_modules(root: Path) -> frozenset[str]:
    """The modules `sanoma_config.py` imports the connectors it lists from (read, not run): a
    workflow may import its connectors from there, even from outside the root."""
    tree = _config_tree(root)
    if tree is None:
        return frozenset()
    origin: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                origin[alias.asname or alias.name] = node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    origin[alias.asname] = alias.name
    modules: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg == "connectors" and isinstance(keyword.value, (ast.List, ast.Tuple)):
                for item in keyword.value.elts:
                    if isinstance(item, ast.Name) and item.id in origin:
                        modules.add(origin[item.id])
                    elif isinstance(item, ast.Attribute):
                        modules.add(ast.unparse(item.value))
    return frozenset(modules)


def _config_tree(root: Path) -> ast.Module | None:
    try:
        return ast.parse((root / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None


def _config_collections(root: Path) -> frozenset[str]:
    """The names `sanoma_config.py` binds to `define_collection(...)` (read, not run): the only
    names a workflow may import from it."""
    tree = _config_tree(root)
    if tree is None:
        return frozenset()
    names: set[str] = set()
    for node in tree.body:
        value: ast.expr | None
        targets: list[ast.expr]
        if isinstance(node, ast.Assign):
            value, targets = node.value, node.targets
        elif isinstance(node, ast.AnnAssign):
            value, targets = node.value, [node.target]
        else:
            continue
        called = value.func if isinstance(value, ast.Call) else None
        if not (isinstance(called, ast.Name) and called.id == "define_collection"
                or isinstance(called, ast.Attribute) and called.attr == "define_collection"):
            continue
        names.update(target.id for target in targets if isinstance(target, ast.Name))
    return frozenset(names)


def _uses_problems(root: Path) -> list[LintProblem]:
    """Once `sanoma_config.py` imports: each ctx call a workflow that lists `uses` makes and the list
    lacks, and each operation a workflow uses that no connector declares (the workflows are
    imported for this, as the worker imports them). A workflow file that
    does not import is left to the system checks, which say why."""
    config, _ = _config_of(root)
    if config is None:
        return []
    ignored: list[str] = []
    definitions = {id(wf): wf for wf in [*config.workflows, *discover_workflows(root, root.name, ignored)]
                   if isinstance(wf, WorkflowDefinition)}
    found = [LintProblem(file, line, column, message, "uses")
             for wf in definitions.values() for file, line, column, message in missing_uses(wf, root)]
    # An operation no connector declares (a typo in ctx.billing.credit.issu): at the call.
    connectors = _known_connectors(root)
    if connectors is not None:
        declared = [op_id for connector in connectors for op_id in connector.operations]
        found += [LintProblem(file, line or 1, column, message, "operations")
                  for wf in definitions.values() for file, line, column, message in undeclared_calls(wf, declared, root)
                  if file is not None]
    return found


def _policy_problems(root: Path) -> list[LintProblem]:
    """What the policy loader refuses; then, once the policies load and `sanoma_config.py` imports,
    the operations they name that no connector declares, the input fields they read that the
    operations they apply to do not have, and the approvers that are nobody."""
    try:
        policy = load_cedar_policy(root / "policies")
    except ConfigError as err:
        return [_policy_lint_problem(root, problem) for problem in err.problems]
    if policy is None:
        return []
    connectors = _known_connectors(root)
    if connectors is None:  # the config does not import: the data files' check says so
        return []
    ops = [op_id for connector in connectors for op_id in connector.operations] + list(ENGINE_OPS)
    found = [_policy_lint_problem(root, problem) for problem in policy.unknown_names(ops)]
    declared = {op_id: op for connector in connectors for op_id, op in connector.operations.items()}
    found += [_policy_lint_problem(root, problem) for problem in policy.unknown_input_fields(declared)]
    found += [_policy_lint_problem(root, item.problem)
              for item in approver_problems(policy, root=root, connectors=connectors) if item.serious]
    return found


def _policy_lint_problem(root: Path, problem: Any) -> LintProblem:
    text = str(problem)
    where, _, message = text.partition(": ")
    file = getattr(problem, "file", None) or where.rpartition(":")[0] or "policies"
    line = getattr(problem, "line", None) or 1
    return LintProblem(file, line, _first_column(root / file, line), message or text, "policy")


def _known_connectors(root: Path) -> list[Connector] | None:
    """Every connector a policy may name an operation of, as resolution makes them: the config's,
    its collections' (the vendor `data`) and what the layers add (people, changes); None when
    `sanoma_config.py` cannot be read."""
    config, trouble = _config_of(root)
    if config is None:
        return None
    connectors = [c for c in config.connectors if isinstance(c, Connector)]
    problems: list[str] = []
    collections = [*config.collections, *discover_collections(root, root.name, problems)]
    if collections:
        connectors.append(data_connector(list(collections)))
    for _, extension in extensions.extensions(extensions.Request(tuple(connectors), root, "instance")):
        connectors += [c for c in extension.connectors if isinstance(c, Connector)]
    return connectors


def _first_column(path: Path, line: int) -> int:
    """Where the text of `line` starts (the policy's first character), from 1."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return 1
    if not 1 <= line <= len(lines):
        return 1
    text = lines[line - 1]
    return len(text) - len(text.lstrip()) + 1


def _config_connectors(root: Path) -> tuple[list[Connector] | None, LintProblem | None]:
    """The connectors `sanoma_config.py` lists, for the data files' resource types; or why not."""
    config, trouble = _config_of(root)
    if config is None:
        return None, trouble
    return [c for c in config.connectors if isinstance(c, Connector)], None


def _config_of(root: Path) -> tuple[SanomaConfig | None, LintProblem | None]:
    """The `config` of `sanoma_config.py` (imported, as `manage.py resources` does); or why not."""
    file = root / CONFIG_FILE
    skipped = "so the data files were not read"
    if not file.is_file():
        return None, LintProblem(CONFIG_FILE, 1, 1, f"the config root has no {CONFIG_FILE} naming its connectors, "
                                                    f"{skipped}", "config")
    try:
        package = import_root(root)
        module = importlib.import_module(f"{package.__name__}.sanoma_config")
    except ConfigError as err:
        return None, LintProblem(CONFIG_FILE, 1, 1, f"{err.message}; {skipped}", "config")
    except Exception as err:  # the company's code failed: a problem to show, not a crash
        line = failure_line(err, file) or 1
        return None, LintProblem(CONFIG_FILE, line, 1, f"{CONFIG_FILE} cannot be imported: {type(err).__name__}: "
                                                       f"{err}; {skipped}", "config")
    config = getattr(module, "config", None)
    if not isinstance(config, SanomaConfig):
        return None, LintProblem(CONFIG_FILE, 1, 1, f"{CONFIG_FILE} must define `config = SanomaConfig(...)`, "
                                                    f"{skipped}", "config")
    return config, None
