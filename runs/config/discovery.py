"""Finding a config root's files: the root imported as a package, its workflow and collection files
discovered, the folders of a kind (`scenarios/`, each app's), the line a failure points at."""
from __future__ import annotations

import importlib
import sys
import traceback
from pathlib import Path
from typing import Any

from connectors.errors import ConfigError, Problem, ProblemKind
from connectors.limits import LimitError
from runs.collections.definition import Collection
from runs.config.workflows import WorkflowDefinition

RESERVED_PACKAGES = {"runs", "connectors", "changes", "wakeups", "features", "sanoma_site", "bench"}


def kind_dirs(root: Path, kind: str) -> list[Path]:
    """The root's folder of a kind, then each app's (`apps/<app>/<kind>`), sorted."""
    dirs = [root / kind]
    apps = root / "apps"
    if apps.is_dir():
        dirs += [app / kind for app in sorted(apps.iterdir()) if app.is_dir()]
    return dirs


def import_root(root: Path) -> Any:
    """Import the root as a package named by its folder, its parent put on `sys.path`."""
    root = root.resolve()
    package = root.name
    if not package.isidentifier():
        raise ConfigError([Problem(f"the config root's folder name {package!r} must be a Python identifier",
                                   kind=ProblemKind.ROOT)])
    if package in RESERVED_PACKAGES:
        raise ConfigError([Problem(f"the config root's folder may not be named {package!r}: sanoma uses that package",
                                   kind=ProblemKind.ROOT)])
    parent = str(root.parent)
    if parent not in sys.path:
        sys.path.insert(0, parent)
    try:
        module = importlib.import_module(package)
    except Exception as err:
        line = failure_line(err, root / "__init__.py")
        raise ConfigError([limit_problem(err, root) or Problem(f"__init__.py: {type(err).__name__}: {err}",
                                                               kind=ProblemKind.CONFIG_FILE, file="__init__.py",
                                                               line=line)]) from err
    located = Path(getattr(module, "__file__", None) or list(module.__path__)[0]).resolve()
    if root not in (located, located.parent):
        raise ConfigError([Problem(f"the package {package!r} is already imported from {located}, not {root}",
                                   kind=ProblemKind.ROOT)])
    return module


def failure_line(err: BaseException, file: Path) -> int | None:
    """The line of `file` where `err` was raised while importing it (a SyntaxError: its own line)."""
    target = file.resolve()

    def same(name: str | None) -> bool:
        try:
            return name is not None and Path(name).resolve() == target
        except OSError:
            return False

    if isinstance(err, SyntaxError) and same(err.filename):
        return err.lineno
    lines = [frame.lineno for frame in traceback.extract_tb(err.__traceback__) if same(frame.filename)]
    return lines[-1] if lines else None


def limit_problem(err: BaseException, root: Path) -> Problem | None:
    """A `Limit` declared wrong, as its own problem: the file and line of the declaration (the
    deepest place under the root the error passed through), what is wrong and how to write it."""
    if not isinstance(err, LimitError):
        return None
    root = root.resolve()
    file, line = None, None
    for frame in traceback.extract_tb(err.__traceback__):
        try:
            path = Path(frame.filename).resolve()
        except OSError:
            continue
        if path.is_relative_to(root):
            file, line = str(path.relative_to(root)), frame.lineno
    place = f"{file}: " if file else ""
    return Problem(f"{place}invalid limit: {err}", kind=ProblemKind.LIMIT, file=file, line=line, hint=err.hint)


def discover_workflows(root: Path, package: str, problems: list[str]) -> list[WorkflowDefinition]:
    """Every workflow defined in `workflows/*.py` and `apps/<app>/workflows/*.py`."""
    found: list[WorkflowDefinition] = []
    for folder in kind_dirs(root, "workflows"):
        if not folder.is_dir():
            continue
        dotted = ".".join((package, *folder.relative_to(root).parts))
        for file in sorted(folder.glob("*.py")):
            if file.name.startswith(("_", "test_")):
                continue
            name = f"{dotted}.{file.stem}"
            try:
                module = importlib.import_module(name)
            except Exception as err:  # a broken file is a problem to list, not a crash
                relative = str(file.relative_to(root))
                problems.append(limit_problem(err, root) or Problem(
                    f"{relative}: {type(err).__name__}: {err}", kind=ProblemKind.WORKFLOW_IMPORT, file=relative,
                    line=failure_line(err, file)))
                continue
            found += [v for v in vars(module).values() if isinstance(v, WorkflowDefinition)]
    return found


def discover_collections(root: Path, package: str, problems: list[str]) -> list[Collection]:
    """Every collection defined in an app's `apps/<app>/collections.py`."""
    found: list[Collection] = []
    apps = root / "apps"
    files = sorted(apps.glob("*/collections.py")) if apps.is_dir() else []
    for file in files:
        relative = str(file.relative_to(root))
        try:
            module = importlib.import_module(".".join((package, *file.relative_to(root).with_suffix("").parts)))
        except ConfigError as err:
            problems.extend(err.problems)
            continue
        except Exception as err:  # a broken file is a problem to list, not a crash
            problems.append(limit_problem(err, root) or Problem(
                f"{relative}: {type(err).__name__}: {err}", kind=ProblemKind.CONFIG_FILE, file=relative,
                line=failure_line(err, file)))
            continue
        found += [v for v in vars(module).values() if isinstance(v, Collection)]
    return found
