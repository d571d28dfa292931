"""A small company for the change tests that run in this process: no connectors, a policy that
holds merges for the owners, and its people."""
from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from changes.lifecycle.remotes.git_setup import init_embedded
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig, load_config
from runs.testing import make_user

POLICY = """\
@id("reads-open")
permit(principal, action in Action::"read", resource);

@id("staff-may-act")
permit(principal in Group::"staff", action, resource);

@id("merges-need-owners")
@approve("group:owners")
@title("Merge a change")
forbid(principal, action == Action::"sanoma.change.merge", resource);
"""
FILES = {
    "__init__.py": "",
    "sanoma_config.py": "from runs.authoring import SanomaConfig\n\nconfig = SanomaConfig(app_name=\"gitco\", "
                        "connectors=[])\n",
    "policies/main.cedar": POLICY,
    "workflows/__init__.py": "",
    "README.md": "The gitco company.\n",
}


def write_root(folder: Path, files: dict[str, str] | None = None) -> Path:
    """The company's files (with `files` added or in their place) in a root under `folder` with a
    package name of its own (a config root is imported by its folder's name, once per process)."""
    root = folder / f"gitco_{uuid.uuid4().hex[:8]}"
    for name, text in {**FILES, **(files or {})}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def use(root: Path, fakes: Path) -> ResolvedConfig:
    """The root's config, this process's; alice (staff, may start runs) and sam (an owner)."""
    make_user("alice", groups=["staff"], perms=["runs.start_workflow"])
    make_user("sam", groups=["staff", "owners"])
    config = load_config(root, fakes="instance", fake_dir=fakes)
    set_config(config)
    return config


GIT = {"GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com", "GIT_COMMITTER_NAME": "Dev",
       "GIT_COMMITTER_EMAIL": "dev@example.com"}


def git(*args: str, cwd: Path) -> str:
    """git, as a developer at the clone runs it; its output."""
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT}).stdout.strip()


@contextmanager
def gitco_site(tmp_path: Path, files: dict[str, str] | None = None) -> Iterator[tuple[Path, Path, ResolvedConfig]]:
    """The gitco company (with `files` added or in their place): its live root, its embedded remote
    and a clone to push from; the live config while inside."""
    root = write_root(tmp_path / "site", files)
    remote = tmp_path / "gitco.git"
    init_embedded(root, remote)
    clone = tmp_path / "clone"
    git("clone", "--quiet", str(remote), str(clone), cwd=tmp_path)
    config = use(root, tmp_path / "fakes")
    try:
        yield remote, clone, config
    finally:
        set_config(None)


def push(clone: Path, branch: str, files: dict[str, str], message: str, *, base: str | None = "main") -> str:
    """Commit `files` on `branch` (made again from `base`; from where the clone stands when None),
    push it; the new head."""
    git("checkout", "--quiet", "-B", branch, *([base] if base else []), cwd=clone)
    for name, text in files.items():
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        (clone / name).write_text(text)
    git("add", "-A", cwd=clone)
    git("commit", "--quiet", "-m", message, cwd=clone)
    git("push", "--quiet", "origin", branch, cwd=clone)
    return git("rev-parse", "HEAD", cwd=clone)
