"""How a path is named to a person: a file of the config root from the root, else from the working
folder; on the desk, never this machine's absolute paths.

A change's page shows its repository (the embedded remote is a folder on this machine), its checks'
problems and how its run ended; each may hold a path under the live config root, under the
temporary folder the checks ran in (`.../sanoma-checks-<random>/<root>/`), or the repository's.
The person reading the page knows the company's files by their path in the repo: `relative` and
`repository` name them so.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any


def display_path(path: str | os.PathLike[str]) -> str:
    """The path as a writer opens it: from the working directory when it is under it."""
    absolute = Path(path).resolve()
    try:
        return str(absolute.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(absolute)


def root_path(path: str | os.PathLike[str], root: Path | None) -> str:
    """The file's name: its path from the config root, else as displayed."""
    if root is not None:
        try:
            return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
        except ValueError:
            pass
    return display_path(path)



# The checks' own tree: `<tmp>/sanoma-checks-<random>/<root name>/` (changes.lifecycle.checks).
_CHECKS_TREE = re.compile(r"(?:/[^\s/'\"]+)*/sanoma-checks-[^\s/'\"]+/[^\s/'\"]+/")


def repository(url: str, root: Path | None) -> str:
    """A repository as shown: a URL as it is; a folder on this machine relative to the config root
    (`../company.git`, the embedded remote beside it)."""
    if "://" in url and not url.startswith("file://"):
        return url
    path = url.removeprefix("file://")
    if root is None or not os.path.isabs(path):
        return path
    return os.path.relpath(path, root)


def relative(value: Any, root: Path | None) -> Any:
    """`value` (text, or JSON: lists and dicts of it) with each path in the config root's folder
    (the root's files, the embedded remote beside it) made relative to the root, and the checks'
    tree left out."""
    if isinstance(value, str):
        text = _CHECKS_TREE.sub("", value)
        if root is not None and root.parent != root:
            # Under the root's folder: the root's own files, and what sits beside it (the embedded remote).
            beside = re.compile(re.escape(str(root.parent)) + r"(?:/[^\s'\"(),:]*)?(?![^\s'\"(),:])")
            text = beside.sub(lambda found: os.path.relpath(found.group(0), root), text)
        return text
    if isinstance(value, list):
        return [relative(item, root) for item in value]
    if isinstance(value, dict):
        return {key: relative(item, root) for key, item in value.items()}
    return value



__all__ = ["display_path", "relative", "repository", "root_path"]
