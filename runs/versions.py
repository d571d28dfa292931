"""Versions: a worker advances only runs of its own workflow versions, and says which it leaves alone.

Each deploy version a worker started on is an `AppVersion` row holding what that code was: its
workflow versions, its policy version, the commit and root it came from (see
runs.config.versioning for what a version covers).
"""
from __future__ import annotations

import logging
import subprocess
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from runs.config.resolution import ResolvedConfig
from runs.config.versioning import version_of
from runs.engine import clock
from runs.models import AppVersion, WorkflowEntry
from runs.policies.versions import policy_version_of
from runs.selectors import runs_on_other_versions

log = logging.getLogger("sanoma.worker")


def register_version(*, version: str, promote: bool, config: ResolvedConfig | None = None) -> tuple[bool, str | None]:
    """Record this worker's version (with `config`: its workflow and policy versions, commit and
    root). A version never seen becomes the latest; an older one becomes latest again only when
    promoted. Returns (is_latest, the latest otherwise)."""
    now = clock.now()
    described = describe_code(config) if config is not None else {}
    with transaction.atomic():
        try:
            with transaction.atomic():
                AppVersion.objects.create(version=version, first_started_at=now, promoted_at=now, **described)
            return True, None
        except IntegrityError:
            pass
        if promote:
            AppVersion.objects.filter(version=version).update(promoted_at=now)
        latest = latest_version()
        # Only a deploy that is (or becomes) the latest says what the code is now (a row made before
        # versions were recorded, or a checkout moved); a refused one changes nothing of the row.
        if described and latest == version:
            AppVersion.objects.filter(version=version).update(retired_at=None, **described)
    return latest == version, latest


UNCOMMITTED = ("deployed from uncommitted changes: no commit holds this code, so no worker can be started for "
               "it; runs pinned here can only be migrated (a patch marker), forked or cancelled. Commit before "
               "deploying runs you want on-demand workers for")


def describe_code(config: ResolvedConfig) -> dict[str, Any]:
    """What an AppVersion row records of a config's code: no commit, and UNCOMMITTED as its
    worker_error, when files under the root differ from HEAD (no commit holds that code)."""
    root = config.root.resolve() if config.root is not None else None
    commit = git_commit(root) if root is not None else ""
    dirty = bool(commit) and root is not None and bool(uncommitted_files(root))
    return {"workflows": dict(config.workflow_versions), "policy_version": config.policy_version,
            "commit": "" if dirty else commit, "root": str(root) if root is not None else "",
            "worker_error": UNCOMMITTED if dirty else ""}


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30,
                              check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None


def git_commit(root: Path) -> str:
    """`git rev-parse HEAD` of the checkout holding `root`; "" outside git."""
    done = _git(root, "rev-parse", "HEAD")
    return done.stdout.strip() if done is not None and done.returncode == 0 else ""


def uncommitted_files(root: Path) -> list[str]:
    """The files under `root` that differ from HEAD (modified, added, deleted or untracked), as
    `git status --porcelain` names them; not the var dir (SANOMA_VAR_DIR, when under the root) nor
    Python's byte-code caches, which the config never reads. A git that fails counts as a change:
    the commit cannot be shown to hold the code."""
    args = ["status", "--porcelain", "--", "."]
    var = Path(settings.VAR_DIR).resolve()
    if var.is_relative_to(root):
        args.append(f":(exclude){var.relative_to(root).as_posix()}")
    done = _git(root, *args)
    if done is None or done.returncode != 0:
        return ["(git status failed)"]
    return [line[3:] for line in done.stdout.splitlines()
            if line.strip() and "__pycache__/" not in line and not line.endswith((".pyc", "__pycache__"))]


def live_versions() -> set[str]:
    """The workflow versions of the latest deploy (empty before any worker started)."""
    workflows = AppVersion.objects.order_by("-promoted_at").values_list("workflows", flat=True).first()
    return set((workflows or {}).values())


def deploy_holding(app_version: str) -> AppVersion | None:
    """The newest deploy whose workflows include `app_version` (a run's version), if any."""
    for row in AppVersion.objects.order_by("-promoted_at").only("version", "workflows", "commit", "root",
                                                                 "policy_version", "promoted_at", "retired_at"):
        if app_version in (row.workflows or {}).values():
            return row
    return None


def latest_version() -> str | None:
    """The version started (or promoted) last; None before any worker started."""
    return AppVersion.objects.order_by("-promoted_at").values_list("version", flat=True).first()


def is_latest(version: str) -> bool:
    """Whether `version` is the latest (or no version is recorded yet)."""
    latest = latest_version()
    return latest is None or latest == version


def sync_workflow_entries(config: ResolvedConfig) -> None:
    """One row per workflow of the config: what start permissions are granted on."""
    for name, definition in config.workflows.items():
        WorkflowEntry.objects.update_or_create(
            name=name, defaults={"title": definition.title, "app": definition.app or ""}
        )


def startup_report(config: ResolvedConfig, *, promote: bool) -> list[str]:
    """What a starting worker warns about: an older version, runs it will leave alone."""
    warnings = []
    latest, newest = register_version(version=config.version, promote=promote, config=config)
    if not latest:
        warnings.append(
            f"This worker runs {config.version}, older than the latest {newest}; it advances only its own runs. "
            "Start it with --promote to make it the latest again"
        )
    others, total = runs_on_other_versions(versions=config.owned_versions)
    if others:
        named = ", ".join(f"{r.id} ({r.app_version})" for r in others)
        more = f" and {total - len(others)} more" if total > len(others) else ""
        warnings.append(
            f"{total} unfinished run(s) are on other versions and are left alone by this worker: {named}{more}. "
            "The supervisor starts a worker of their version when it was deployed from a commit (see the "
            "Versions page); one deployed from uncommitted changes has none: migrate its runs (a patch "
            "marker), fork or cancel them"
        )
    return warnings


def loaded_policy(policy: Any) -> str:
    """What the worker's banner says of the policy it loaded: its version as a deploy, a plan and
    the ledger name it (`policy@...`: a hash of the Cedar files, or a function policy's given
    version). (Every workflow version covers the policy
    version too: see runs.config.versioning.)"""
    if not getattr(policy, "defined", False):
        return "no policy (every call is allowed)"
    rules = getattr(policy, "rules", None)
    if rules is not None:
        files = len({rule.file for rule in rules})
        return (f"policy {policy_version_of(policy)} ({files} file{'s' if files != 1 else ''}, "
                f"{len(rules)} polic{'ies' if len(rules) != 1 else 'y'})")
    return f"policy {policy_version_of(policy)} ({getattr(policy, 'kind', 'python')})"


__all__ = ["UNCOMMITTED", "deploy_holding", "describe_code", "git_commit", "is_latest", "latest_version",
           "live_versions", "loaded_policy", "register_version", "startup_report", "sync_workflow_entries",
           "uncommitted_files", "version_of"]
