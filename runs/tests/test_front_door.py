"""The front door, `runs.authoring`: the one place a company's files import from. Its names are
listed here, so a name added or dropped is a decision this test records."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import runs.authoring

ROOT = Path(__file__).resolve().parents[2]
COMPANY = ROOT / "company"
SANOMA_PACKAGES = ("connectors", "runs", "changes", "wakeups", "features", "sanoma_site")

# What an author meets, by what it is for. Before the front door: 54 names advertised over six
# import points in four apps (connectors, connectors.fakes, runs.authoring, runs.policies,
# changes.datafiles.sanoma, wakeups.declare).
FRONT_DOOR = {
    "workflows": ["Ctx", "Every", "Schedule", "define_workflow"],
    "connectors": ["CallContext", "Limit", "Retry", "VendorInfo", "define_connector", "define_driver", "define_fake",
                   "define_resource", "op", "with_setup"],
    "the config": ["SanomaConfig", "define_collection", "SPEND_STEPS"],
    "Python policies": ["allow", "approve", "define_policy", "deny"],
    "data files and sanoma's own declarations": ["group", "local", "person", "secret", "wakeup"],
    "errors": ["DriverError", "SanomaError", "error_code"],
}


def test_the_front_door_offers_exactly_these_names():
    listed = [name for names in FRONT_DOOR.values() for name in names]
    assert sorted(runs.authoring.__all__) == sorted(listed)
    assert len(listed) == len(set(listed)) == 29
    for name in listed:
        assert getattr(runs.authoring, name) is not None, name
    # The engine's types stay where they are, importable, not advertised.
    for internal in ("Approved", "NoInput", "Observed", "Fake", "PolicyCall", "ErrorCode", "Operation"):
        assert internal not in runs.authoring.__all__


def test_the_names_are_the_engines_own_not_copies():
    import connectors
    from runs.config import workflows
    from runs.policies import python_policies

    assert runs.authoring.define_connector is connectors.define_connector
    assert runs.authoring.define_fake is connectors.define_fake
    assert runs.authoring.define_workflow is workflows.define_workflow
    assert runs.authoring.allow is python_policies.allow


def test_a_workflow_file_is_read_and_outlined_without_django_or_a_database():
    code = (
        "import sys\n"
        "import runs.authoring\n"
        "from runs.config.outline import outline_of_source\n"
        f"source = open({str(COMPANY / 'workflows' / 'refund.py')!r}).read()\n"
        "outline = outline_of_source(source, 'run', 'refund.py')\n"
        "assert not outline.problems, outline.problems\n"
        "assert [n.info.get('op') for n in outline.walk() if n.kind == 'op'][:2] == "
        "['shop.order.get', 'shop.order.refund'], list(outline.walk())\n"
        "assert 'runs.models' not in sys.modules and 'django.db.models' not in sys.modules\n"
        "assert 'DJANGO_SETTINGS_MODULE' not in __import__('os').environ\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={"PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def sanoma_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import of sanoma's own packages in one file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        found += [(node.lineno, m) for m in modules if m.split(".")[0] in SANOMA_PACKAGES]
    return found


def test_the_example_company_imports_from_the_front_door_alone():
    # Besides the front door, a company imports the first-party connectors it uses, each from its package.
    elsewhere = [f"{path.relative_to(ROOT)}:{line} imports {module}"
                 for path in sorted(COMPANY.rglob("*.py")) for line, module in sanoma_imports(path)
                 if module != "runs.authoring" and not module.startswith("connectors.vendors.")]
    assert elsewhere == []
