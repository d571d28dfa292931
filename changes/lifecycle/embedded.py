"""A company repo on this machine that deploys to itself: the demo's, and the life-of-a-change test's.

`prepare_live_root(source=, live=, remote=)` makes `live` a git working tree holding the company at
`source` (copied when `live` does not exist: afterwards `live` is the company, changed by its changes),
declaring this machine as its host (`resources/hosts.py`: `sanoma.local(name="live")`), with an
embedded remote `remote` (a bare repository) as its `origin`, whose post-receive hook tells sanoma
about every push (`manage.py change notify pushed`). Idempotent: run again, it changes nothing.
"""
from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from django.conf import settings

from changes.lifecycle.remotes.git_setup import init_embedded, install_hook

HOSTS_FILE = "resources/hosts.py"
HOSTS = '''"""Where this company runs: this machine. A change deploys here after its merge: the merged revision
is checked out into the live root and the workers start again on it."""
from changes.datafiles import sanoma

live = sanoma.local(name="live", branch="main")
'''
IGNORED = "__pycache__/\n*.pyc\n"


def prepare_live_root(*, source: Path, live: Path, remote: Path, hook_env: Mapping[str, str] | None = None) -> None:
    """See the module's docstring. `hook_env` is what the hook's `manage.py` runs with (the site's
    database and root), written into the hook."""
    live = live.resolve()
    if not live.exists():
        shutil.copytree(source, live, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if not (live / ".git").exists():  # before its first commit: it declares its host, git ignores caches
        hosts = live / HOSTS_FILE
        if not hosts.exists():
            hosts.parent.mkdir(parents=True, exist_ok=True)
            hosts.write_text(HOSTS)
        ignore = live / ".gitignore"
        if not ignore.exists():
            ignore.write_text(IGNORED)
    init_embedded(live, remote.resolve())
    env = [f"{name}={value}" for name, value in sorted((hook_env or {}).items())]
    command = [*(["env", *env] if env else []), sys.executable, str(Path(settings.BASE_DIR) / "manage.py"),
               "change", "notify", "pushed"]
    install_hook(remote.resolve(), command)


__all__ = ["HOSTS", "prepare_live_root"]
