"""How a file of the config root is named to a person: from the root, else from the working folder."""
from __future__ import annotations

import os
from pathlib import Path


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


__all__ = ["display_path", "root_path"]
