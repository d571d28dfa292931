"""The policy version: which policy judged a call, a plan or a held approval.

One answer for the whole app (the deploy's `policy_version`, a plan's, a rejudged approval's
ledger record): `"policy@<16 hex>"` for Cedar files (a hash of the files' names and text, the
same hash the Cedar set stamps on its decisions), `"policy@<version>"` for a function policy (the
version its author declared with `define_policy`), and `""` when no policy is configured (every
call is allowed).
"""
from __future__ import annotations

from typing import Any

PREFIX = "policy@"
CEDAR_PREFIX = "cedar:"


def policy_version_of(policy: Any) -> str:
    """The version of `policy` as a deploy, a plan and the ledger name it; "" for no policy."""
    if policy is None or not getattr(policy, "defined", False):
        return ""
    version = str(getattr(policy, "version", "") or "")
    if version.startswith(CEDAR_PREFIX):
        version = version[len(CEDAR_PREFIX):]
    return PREFIX + version if version else ""


def shown(version: str) -> str:
    """A policy version in a sentence: the version, or "no policy" for ""."""
    return version or "no policy"


__all__ = ["policy_version_of", "shown"]
