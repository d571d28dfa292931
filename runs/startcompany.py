"""A new config root made from the template in `runs/startcompany_template/` (what
`manage.py startcompany <dir>` runs): a connector with its fake and a resource type, a workflow
whose send is held for an approver, a Cedar policy, data files with people, and a scenario.

The folder's name is the company's: the root is imported as a package of that name, so it must be a
Python identifier that names no module Python can already import. The folder must not exist, or be
empty. Nothing is written until both hold, and the files are written into a folder beside the
target and moved into place at once, so a refusal or a failure leaves nothing behind.
"""
from __future__ import annotations

import importlib.util
import keyword
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from connectors.errors import InvalidInput
from runs.config.discovery import RESERVED_PACKAGES

TEMPLATE = Path(__file__).resolve().parent / "startcompany_template"
PLACEHOLDER = "{{ name }}"  # the package: the folder's name
APP_PLACEHOLDER = "{{ app_name }}"  # the config's app_name: lowercase letters, digits and dashes
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
TEMPLATE_SUFFIX = "-tpl"  # `vendors/billing.py-tpl` is written as `vendors/billing.py`


def make_company(*, target: Path) -> list[Path]:
    """Write a new config root at `target`; returns the files written, relative to it. Raises
    InvalidInput naming what is wrong (the name, or the folder) before writing anything."""
    target = Path(os.path.abspath(target))
    name = target.name
    _check_name(name)
    _check_folder(target)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        written = _render(staging, name)
        if target.exists():
            target.rmdir()  # empty (checked above): replaced by the made folder
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return written


def _check_name(name: str) -> None:
    why = ""
    if not NAME.match(name):
        why = "is not a Python identifier (ASCII letters, digits and _, starting with a letter)"
    elif keyword.iskeyword(name):
        why = "is a Python keyword"
    elif name in RESERVED_PACKAGES or name == "company":
        why = "is a package sanoma uses"
    elif name in sys.stdlib_module_names or _importable(name):
        why = "is a module Python already imports (the root is imported by its folder's name)"
    if why:
        raise InvalidInput(f"startcompany: the company's name {name!r} {why}; choose another folder name, "
                           f"such as {_suggestion(name)!r}", data={"name": name})


def _importable(name: str) -> bool:
    """A module or a package with code of its own (an empty folder of that name on the path does not count)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    return spec is not None and spec.origin is not None


def _suggestion(name: str) -> str:
    cleaned = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name.lower()).strip("_")
    cleaned = cleaned.encode("ascii", "ignore").decode()
    if not cleaned or not cleaned[0].isalpha():
        cleaned = f"co_{cleaned}" if cleaned else "my_company"
    if not NAME.match(cleaned) or keyword.iskeyword(cleaned) or _importable(cleaned) \
            or cleaned in RESERVED_PACKAGES or cleaned == "company":
        cleaned = f"{cleaned}_co"
    return cleaned


def _check_folder(target: Path) -> None:
    if not target.parent.is_dir():
        raise InvalidInput(f"startcompany: the folder {target.parent} does not exist; make it first",
                           data={"folder": str(target.parent)})
    if target.exists() and not target.is_dir():
        raise InvalidInput(f"startcompany: {target} is a file, not a folder", data={"folder": str(target)})
    if target.is_dir() and any(target.iterdir()):
        raise InvalidInput(f"startcompany: the folder {target} is not empty; give a new folder or an empty one",
                           data={"folder": str(target)})


def app_name(name: str) -> str:
    """The config's `app_name` for a company's package name: `Acme_Billing` is `acme-billing`."""
    return name.lower().replace("_", "-")


def _render(into: Path, name: str) -> list[Path]:
    written = []
    for source in sorted(TEMPLATE.rglob("*")):
        if not source.is_file() or "__pycache__" in source.parts:
            continue
        relative = source.relative_to(TEMPLATE)
        if relative.name.endswith(TEMPLATE_SUFFIX):
            relative = relative.with_name(relative.name.removesuffix(TEMPLATE_SUFFIX))
        out = into / relative
        out.parent.mkdir(parents=True, exist_ok=True)
        text = source.read_text(encoding="utf-8").replace(APP_PLACEHOLDER, app_name(name))
        out.write_text(text.replace(PLACEHOLDER, name), encoding="utf-8")
        written.append(relative)
    os.chmod(into, 0o755)  # mkdtemp makes it private; a made folder is an ordinary one
    return written
