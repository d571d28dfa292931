"""A GitHub tarball unpacked safely: checked whole before anything is written (no absolute paths, no
`..`, no link pointing outside, no devices), the archive's one top folder stripped."""
from __future__ import annotations

import copy
import posixpath
import re
import shutil
import tarfile
from pathlib import Path, PurePosixPath
from typing import IO, Any

from connectors.errors import RemoteError


def extract(archive: IO[bytes], dest: Path, *, what: str) -> None:
    """Extract the archive into `dest` without its one top folder, after checking every member:
    nothing is written when one is refused."""
    try:
        tar = tarfile.open(fileobj=archive, mode="r:*")
    except tarfile.TarError as err:
        raise RemoteError(f"{what} is not a tar archive: {err}") from None
    with tar:
        keep: list[tarfile.TarInfo] = []
        top: str | None = None
        for member in tar.getmembers():
            name = member.name
            if name.startswith("/") or re.match(r"^[A-Za-z]:", name) or "\\" in name:
                _refuse(what, name, "an absolute path")
            parts = [p for p in PurePosixPath(name).parts if p != "."]
            if ".." in parts:
                _refuse(what, name, "a '..' in its path")
            if not parts:
                continue
            if top is None:
                top = parts[0]
            if parts[0] != top:
                _refuse(what, name, f"outside the archive's top folder {top}/")
            rest = "/".join(parts[1:])
            if not rest:
                continue
            if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
                _refuse(what, name, "neither a file, a folder nor a link")
            changes: dict[str, Any] = {"name": rest}
            if member.issym():
                target = member.linkname
                if target.startswith("/") or not target:
                    _refuse(what, name, f"a link to the absolute path {target!r}")
                landed = posixpath.normpath(posixpath.join(posixpath.dirname(rest), target))
                if landed == ".." or landed.startswith("../"):
                    _refuse(what, name, f"a link pointing outside ({target!r})")
            elif member.islnk():
                linked = [p for p in PurePosixPath(member.linkname).parts if p != "."]
                if member.linkname.startswith("/") or ".." in linked or not linked or linked[0] != top:
                    _refuse(what, name, f"a hard link pointing outside ({member.linkname!r})")
                changes["linkname"] = "/".join(linked[1:])
            kept = copy.copy(member)
            for name_, value in changes.items():
                setattr(kept, name_, value)
            keep.append(kept)
        try:
            # The standard library's "data" filter (Python 3.11.4 on) checks again as it writes.
            if hasattr(tarfile, "data_filter"):
                tar.extractall(dest, members=keep, filter="data")
            else:  # pragma: no cover - older 3.11s: the checks above are all there is
                tar.extractall(dest, members=keep)
        except (tarfile.TarError, OSError) as err:
            for child in dest.iterdir():
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
            raise RemoteError(f"{what} could not be written to {dest}: {err}") from None


def _refuse(what: str, member: str, why: str) -> None:
    raise RemoteError(f"{what} holds {member!r}, {why}: nothing was written", data={"member": member})


__all__ = ["extract"]
