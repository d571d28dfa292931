"""App versions: a worker advances only runs of its own version, and says which it leaves alone."""
from __future__ import annotations

import logging
from typing import Any

from django.db import IntegrityError, transaction

from runs.config.resolution import ResolvedConfig
from runs.engine import clock
from runs.models import AppVersion, WorkflowEntry
from runs.selectors import runs_on_other_versions

log = logging.getLogger("sanoma.worker")


def register_version(*, version: str, promote: bool) -> tuple[bool, str | None]:
    """Record this worker's version. A version never seen becomes the latest; an older one
    becomes latest again only when promoted. Returns (is_latest, the latest otherwise)."""
    now = clock.now()
    with transaction.atomic():
        try:
            with transaction.atomic():
                AppVersion.objects.create(version=version, first_started_at=now, promoted_at=now)
            return True, None
        except IntegrityError:
            pass
        if promote:
            AppVersion.objects.filter(version=version).update(promoted_at=now)
            return True, None
    latest = latest_version()
    return latest == version, latest


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
    latest, newest = register_version(version=config.version, promote=promote)
    if not latest:
        warnings.append(
            f"This worker runs {config.version}, older than the latest {newest}; it advances only its own runs. "
            "Start it with --promote to make it the latest again"
        )
    others, total = runs_on_other_versions(version=config.version)
    if others:
        named = ", ".join(f"{r.id} ({r.app_version})" for r in others)
        more = f" and {total - len(others)} more" if total > len(others) else ""
        warnings.append(
            f"{total} unfinished run(s) are on other versions and are left alone by this worker: {named}{more}. "
            "Run a worker of their version to finish them, or cancel them"
        )
    return warnings


def loaded_policy(policy: Any) -> str:
    """What the worker's banner says of the policy it loaded. The app version is the workflows'
    code only (runs stay on the version they started on), so a changed policy shows here: the
    Cedar set's own version (a hash of its files), or a function policy's given version."""
    if not getattr(policy, "defined", False):
        return "no policy (every call is allowed)"
    rules = getattr(policy, "rules", None)
    if rules is not None:
        files = len({rule.file for rule in rules})
        return (f"policy {policy.version} ({files} file{'s' if files != 1 else ''}, "
                f"{len(rules)} polic{'ies' if len(rules) != 1 else 'y'})")
    return f"policy {getattr(policy, 'kind', 'python')} version {policy.version}"
