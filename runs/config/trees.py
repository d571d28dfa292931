"""Another checkout of the company's config root (a change's head, a commit's worktree), resolved
in this process: `load_tree(path)`.

A config root is imported as a package named by its folder, so two checkouts of one company
share module names: a process that imported one cannot import the other (`import_root` refuses
it, naming both places). Whatever compares the live code with another tree runs the tree in a
process of its own (`manage.py replay --tree DIR` starts one with `SANOMA_ROOT=DIR`).
"""
from __future__ import annotations

from pathlib import Path

from django.conf import settings

from runs.config.resolution import ResolvedConfig, load_config


def load_tree(path: Path) -> ResolvedConfig:
    """The resolved config of the tree at `path`, versioned by its own code (a fixed
    SANOMA_APP_VERSION names the running deploy, not this tree). `ConfigError` says what stops it."""
    return load_config(Path(path), fakes=settings.SANOMA_FAKES, fake_dir=settings.VAR_DIR / "fakes",
                       app_version=None)


def is_live_root(path: Path) -> bool:
    """Whether `path` is the config root this process runs (SANOMA_ROOT)."""
    return Path(path).resolve() == Path(settings.SANOMA_ROOT).resolve()
