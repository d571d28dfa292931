"""A small company for the change tests that run in this process: no connectors, a policy that
holds merges for the owners, and its people."""
from __future__ import annotations

import uuid
from pathlib import Path

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


def write_root(folder: Path) -> Path:
    """The company's files in a root under `folder` with a package name of its own (a config root
    is imported by its folder's name, once per process)."""
    root = folder / f"gitco_{uuid.uuid4().hex[:8]}"
    for name, text in FILES.items():
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
