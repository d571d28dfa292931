"""The diff a change's checks record: what the checked commit brings into the base, as its remote
answers it (`changes.lifecycle.remotes.diffs`). A remote that cannot say (it has no `diff`, or the call
fails) gives `{"problem": ...}`: the checks' verdict never depends on it."""
from __future__ import annotations

from typing import Any

from connectors.errors import SanomaError
from connectors.remotes import Remote


def diff_of(remote: Remote, *, url: str, sha: str, base: str) -> dict[str, Any]:
    differ = getattr(remote, "diff", None)
    if differ is None:
        return {"problem": f"the {remote.name} remote does not show what a change brings into its base"}
    try:
        found: dict[str, Any] = differ(url, sha=sha, base=base)
    except SanomaError as err:
        return {"problem": f"the diff against {base} could not be read: {err}"}
    return found


__all__ = ["diff_of"]
