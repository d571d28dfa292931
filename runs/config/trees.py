"""Another checkout of the company's config root (a change's head, a commit's worktree), resolved
in this process: `load_tree(path)`.

A config root is imported as a package named by its folder, so two checkouts of one company
share module names: a process that imported one cannot import the other (`import_root` refuses
it, naming both places). Whatever compares the live code with another tree runs the tree in a
process of its own (`manage.py replay --tree DIR` starts one with `SANOMA_ROOT=DIR`).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from django.conf import settings
from django.db import connections

from runs.config.resolution import ResolvedConfig, load_config


def load_tree(path: Path) -> ResolvedConfig:
    """The resolved config of the tree at `path`, versioned by its own code (a fixed
    SANOMA_APP_VERSION names the running deploy, not this tree). `ConfigError` says what stops it."""
    return load_config(Path(path), fakes=settings.SANOMA_FAKES, fake_dir=settings.VAR_DIR / "fakes",
                       app_version=None)


def is_live_root(path: Path) -> bool:
    """Whether `path` is the config root this process runs (SANOMA_ROOT)."""
    return Path(path).resolve() == Path(settings.SANOMA_ROOT).resolve()


def connection_url() -> str:
    """A DATABASE_URL naming the database this process uses, for a process that must read the same
    one (the settings may have been given no URL: the default SQLite file; under a test runner, the
    test database)."""
    return url_of(connections["default"].settings_dict)


def url_of(settings_dict: Mapping[str, Any]) -> str:
    """A DATABASE_URL naming the database a Django `DATABASES` entry names."""
    engine, name = settings_dict["ENGINE"], str(settings_dict["NAME"])
    if engine.endswith("sqlite3"):
        return "sqlite://" + str(Path(name).resolve())
    user = quote(str(settings_dict.get("USER") or ""), safe="")
    password = quote(str(settings_dict.get("PASSWORD") or ""), safe="")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = str(settings_dict.get("HOST") or "")
    if host.startswith("/"):
        host = quote(host, safe="")
    port = f":{settings_dict['PORT']}" if settings_dict.get("PORT") else ""
    options = {k: v for k, v in (settings_dict.get("OPTIONS") or {}).items() if isinstance(v, (str, int))}
    query = f"?{urlencode(options)}" if options else ""  # sslmode and the like, as the URL gave them
    return f"postgresql://{auth}{host}{port}/{quote(name, safe='')}{query}"


def process_env(root: Path) -> dict[str, str]:
    """The environment of a `manage.py` process running the config root at `root` on this
    process's database."""
    return {**os.environ, "SANOMA_ROOT": str(Path(root).resolve()), "DATABASE_URL": connection_url()}
