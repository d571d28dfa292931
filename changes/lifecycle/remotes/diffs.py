"""What a change brings into its base, as the remotes answer it (`diff`): the files changed since
the branch left the base (`git diff base...head`), each with its status and line counts, and the
patch, cut at `MAX_PATCH_CHARS` (then `truncated`) so the change's record stays small.

    {"base": "main", "base_sha": ..., "merge_base": ..., "sha": ...,
     "files": [{"path": "resources/catalog.py", "status": "modified", "added": 3, "removed": 1}],
     "added": 3, "removed": 1, "patch": "diff --git ...", "truncated": false}
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

MAX_PATCH_CHARS = 100_000
MAX_FILES = 500
STATUSES = ("added", "modified", "removed", "renamed", "changed")


def report(*, base: str, base_sha: str, merge_base: str, sha: str, files: Iterable[Mapping[str, Any]],
           patch: str) -> dict[str, Any]:
    """The diff as every remote answers it, its patch and file list cut to size."""
    listed = [{"path": str(f["path"]), "status": f.get("status") if f.get("status") in STATUSES else "changed",
               "added": f.get("added"), "removed": f.get("removed")} for f in files]
    counted = [f for f in listed if isinstance(f["added"], int)]
    truncated = len(patch) > MAX_PATCH_CHARS or len(listed) > MAX_FILES
    return {"base": base, "base_sha": base_sha, "merge_base": merge_base, "sha": sha,
            "files": listed[:MAX_FILES], "files_count": len(listed),
            "added": sum(f["added"] for f in counted), "removed": sum(f["removed"] or 0 for f in counted),
            "patch": patch[:MAX_PATCH_CHARS], "truncated": truncated}


__all__ = ["MAX_FILES", "MAX_PATCH_CHARS", "STATUSES", "report"]
