"""The project's layers: dependencies point one way, `connectors` <- `runs` <- `changes`, `wakeups`,
`features`; the site, the example company and the benches sit on top.

Inside a package, contexts point one way too (`INNER_RULES`): the declared state (`changes`) does not
import the apps built on it, credentials (`changes.credentials`) and the life of a change
(`changes.lifecycle`), except through the public modules each names; the engine (`runs.engine`)
does not import the approvals' services.

Read from the source with `ast` (nothing is imported), so an import hidden inside a function
counts the same as one at the top of a module.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Each package's layer: a module may import from its own layer's package and from lower layers.
LAYERS = {
    "connectors": 0,
    "runs": 1,
    "changes": 2,
    "wakeups": 2,
    "features": 2,
    "sanoma_site": 3,
    "company": 3,
    "bench": 4,
}

# Imports inside functions that are there on purpose, not to dodge an import cycle.
DEFERRED_ON_PURPOSE = {
    # Django calls ready() once the app registry is loaded: models may be imported only then.
    ("runs/apps.py", "runs.approvals.permissions"),
    ("runs/apps.py", "runs.config.checks"),
    ("runs/apps.py", "runs.direct_calls.workflow"),
    ("sanoma_site/apps.py", "features.library.sandbox"),
    ("sanoma_site/apps.py", "runs.sandbox.scenarios"),
    # The life of a change's extension is installed from ready(); what it names loads the models.
    ("changes/lifecycle/extension.py", "changes.lifecycle.services"),
    ("changes/lifecycle/extension.py", "changes.services"),
    ("changes/lifecycle/extension.py", "changes.lifecycle.admin"),
    # The spend steps read the database: the front door loads them on first use, so it imports without Django.
    ("runs/authoring.py", "runs.spend.steps"),
    # Fakes load on first use, so a driver-only import does not pull in the fake machinery.
    ("connectors/__init__.py", "connectors.fakes"),
    ("connectors/__init__.py", "connectors"),
    # The scenario library (behave and its parsers) loads on first use, so commands start without it.
    ("sanoma_site/api_scenarios.py", "features.library.errors"),
    ("sanoma_site/api_scenarios.py", "features.library.loader"),
    ("sanoma_site/api_scenarios.py", "features.library.sandbox"),
    ("sanoma_site/catalog.py", "features.library.loader"),
}


@dataclass(frozen=True)
class InnerRule:
    """Modules of `package` (outside its sub-packages `besides`) import nothing of `target` but the
    modules listed in `public` (and their own sub-modules)."""

    package: str
    target: str
    besides: tuple[str, ...] = ()
    public: tuple[str, ...] = ()

    def covers(self, module: str) -> bool:
        return _within(module, self.package) and not any(_within(module, b) for b in self.besides)

    def forbids(self, target: str) -> bool:
        return _within(target, self.target) and not any(_within(target, p) for p in self.public)


# The two apps nested in `changes` build on the declared state; the declared state reaches them only
# through these public modules: the credentials' reads (`selectors`: statuses, a secret's value) and
# the life of a change's live root (`embedded`: preparing this machine's root and its repository),
# each imported by its full name (`from changes.lifecycle.embedded import ...`).
CHANGES_APPS = ("changes.credentials", "changes.lifecycle")
INNER_RULES = (
    InnerRule("changes", "changes.credentials", besides=CHANGES_APPS, public=("changes.credentials.selectors",)),
    InnerRule("changes", "changes.lifecycle", besides=CHANGES_APPS, public=("changes.lifecycle.embedded",)),
    # The engine runs the approvals' rules (who may decide) but not their services (deciding is a surface's).
    InnerRule("runs.engine", "runs.approvals.services"),
)


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


@dataclass(frozen=True)
class Arrow:
    source: str  # the importing file, relative to the project root
    line: int
    target: str  # the imported module
    deferred: bool  # inside a function or method

    def __str__(self) -> str:
        return f"{self.source}:{self.line} imports {self.target}" + (" (inside a function)" if self.deferred else "")


def _package(module: str) -> str:
    return module.split(".")[0]


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve_relative(path: Path, node: ast.ImportFrom) -> str:
    here = _module_of(path).split(".")
    if path.name != "__init__.py":
        here = here[:-1]
    base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
    return ".".join([*base, *([node.module] if node.module else [])])


def arrows_of(path: Path) -> list[Arrow]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[Arrow] = []
    source = str(path.relative_to(ROOT))

    def visit(node: ast.AST, deferred: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend(Arrow(source, child.lineno, alias.name, deferred) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                target = _resolve_relative(path, child) if child.level else (child.module or "")
                found.append(Arrow(source, child.lineno, target, deferred))
            visit(child, inner)

    visit(tree, False)
    return [a for a in found if _package(a.target) in LAYERS]


def project_files() -> list[Path]:
    files = []
    for package in LAYERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                files.append(path)
    files.append(ROOT / "conftest.py")
    return files


def _layer_of(path: Path) -> tuple[str, int]:
    package = path.relative_to(ROOT).parts[0]
    if package == "conftest.py":
        return "conftest", LAYERS["bench"]  # the shared pytest fixtures: scaffolding over every package
    return package, LAYERS[package]


def upward_arrows() -> list[Arrow]:
    bad = []
    for path in project_files():
        package, layer = _layer_of(path)
        for arrow in arrows_of(path):
            target = _package(arrow.target)
            if target == package or LAYERS[target] < layer:
                continue
            if target == "company" and "tests" in path.relative_to(ROOT).parts:
                continue  # the example company is the tests' fixture data
            parts = path.relative_to(ROOT).parts
            if parts[:2] == ("connectors", "vendors") and "tests" in parts:
                continue  # a vendor's own tests run its connector as a company does: through the engine
            bad.append(arrow)
    return bad


def inner_arrows(rules=INNER_RULES) -> list[Arrow]:
    """Imports against a rule inside a package; tests are left out (they compose the contexts they exercise)."""
    bad = []
    for path in project_files():
        relative = path.relative_to(ROOT)
        if "tests" in relative.parts or relative.parts[0] == "conftest.py":
            continue
        module = _module_of(path)
        for rule in rules:
            if rule.covers(module):
                bad += [arrow for arrow in arrows_of(path) if rule.forbids(arrow.target)]
    return sorted(bad, key=lambda a: (a.source, a.line))


def deferred_imports() -> list[Arrow]:
    """Imports of the project's own modules inside functions of non-test modules."""
    bad = []
    for path in project_files():
        relative = path.relative_to(ROOT)
        if "tests" in relative.parts or relative.parts[0] in ("bench", "conftest.py"):
            continue
        for arrow in arrows_of(path):
            if arrow.deferred and (arrow.source, arrow.target) not in DEFERRED_ON_PURPOSE:
                bad.append(arrow)
    return bad


def test_no_arrow_points_back_up_the_layers():
    bad = upward_arrows()
    assert not bad, "imports against the layers (connectors <- runs <- changes, wakeups, features):\n" + "\n".join(
        map(str, bad))


def test_no_arrow_climbs_inside_a_package():
    bad = inner_arrows()
    assert not bad, ("imports against a package's inner direction (the declared state does not import credentials nor "
                     "the life of a change but through their public modules; the engine does not import the "
                     "approvals' services):\n" + "\n".join(map(str, bad)))


def test_a_planted_climb_inside_a_package_is_found(tmp_path, monkeypatch):
    # The inner rules themselves: declared-state modules reaching into the life of a change (one
    # inside a function) and the credentials' services are found; a public module is not.
    changes = tmp_path / "changes"
    (changes / "resources").mkdir(parents=True)
    (changes / "lifecycle").mkdir()
    for package in (changes, changes / "resources", changes / "lifecycle"):
        (package / "__init__.py").write_text("")
    (changes / "resources" / "climbing.py").write_text(
        "from changes.lifecycle.hosts import local_functions\n"
        "from changes.credentials import services\n"
        "from changes.credentials.selectors import secret_value\n"
        "from changes.lifecycle.embedded import prepare_live_root\n"
        "def later():\n"
        "    import changes.lifecycle.services\n"
    )
    (changes / "lifecycle" / "fine.py").write_text("from changes.resources import climbing\n")
    module = __import__(__name__, fromlist=["ROOT"])
    monkeypatch.setattr(module, "ROOT", tmp_path)
    monkeypatch.setattr(module, "LAYERS", {"changes": 2})
    monkeypatch.setattr(module, "project_files", lambda: sorted(changes.rglob("*.py")))
    assert [(a.source, a.line, a.target) for a in inner_arrows()] == [
        ("changes/resources/climbing.py", 1, "changes.lifecycle.hosts"),
        ("changes/resources/climbing.py", 2, "changes.credentials"),
        ("changes/resources/climbing.py", 6, "changes.lifecycle.services"),
    ]


def test_no_import_hides_inside_a_function():
    bad = deferred_imports()
    assert not bad, ("imports inside functions hide the module graph; import at the top, or list the reason in "
                     "DEFERRED_ON_PURPOSE:\n" + "\n".join(map(str, bad)))


def test_the_walk_sees_imports_at_every_depth(tmp_path, monkeypatch):
    # The checker itself: an arrow from runs up to wakeups, hidden in a method, is found.
    package = tmp_path / "runs"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "sneaky.py").write_text(
        "import connectors\n"
        "class A:\n"
        "    def go(self):\n"
        "        from wakeups.sweep import sweep\n"
        "        return sweep\n"
        "from . import sibling\n"
    )
    monkeypatch.setattr(__import__(__name__, fromlist=["ROOT"]), "ROOT", tmp_path)
    arrows = arrows_of(package / "sneaky.py")
    assert [(a.target, a.deferred) for a in arrows] == [
        ("connectors", False), ("wakeups.sweep", True), ("runs", False)]


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_every_layered_package_exists(package):
    assert (ROOT / package).is_dir(), f"{package}/ is listed in LAYERS but is not in the project"
