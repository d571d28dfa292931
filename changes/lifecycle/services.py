"""The life of a change for the surfaces (`manage.py change`, the admin, the API, the remote's hook):
open a change, tell changes what the remote did, and, when a worker starts on a new version, move
the changes it deployed onto it (`stamp_version`, which touches the engine's tables)."""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from changes.lifecycle import live
from changes.lifecycle.errors import RemoteCode
from changes.lifecycle.models import ChangeRun
from changes.lifecycle.remotes import remote_of
from changes.lifecycle.states import ChangeState
from changes.lifecycle.workflow import NAME, ChangeInput, change_code
from connectors.errors import ErrorCode, InvalidInput, RemoteError, SanomaError
from runs import services as run_services
from runs.approvals.permissions import Principal, check_can_start, principal_of
from runs.config.registry import get_config
from runs.config.resolution import ResolvedConfig
from runs.engine import clock, transitions
from runs.errors import RunCode
from runs.models import AppVersion, Run, RunStatus

log = logging.getLogger("sanoma.changes")

TOPICS = ("pushed", "checks_passed", "merged", "deployed")
UNFINISHED = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING)


@dataclass(frozen=True)
class Stamped:
    run_id: str
    pending: bool  # it was waiting or mid-advance: the caller must wake it on the new version


def stamp_version(*, run_ids: Sequence[str], version: str) -> list[Stamped]:
    """Move unfinished change runs onto `version` after a deploy, so the new worker finishes them.

    One conditional UPDATE per run inside one transaction: of two workers stamping at once, each
    run is stamped by exactly one. Runs of other workflows and ended runs are left as they are.
    """
    stamped: list[Stamped] = []
    # A deploy version stamps the change workflow's own version in that deploy (a run's version is
    # its workflow's: runs.config.versioning); a version no deploy records is stamped as given.
    deployed = AppVersion.objects.filter(version=version).values_list("workflows", flat=True).first() or {}
    version = deployed.get(NAME, version)
    with transaction.atomic():
        candidates = list(
            Run.objects.filter(pk__in=list(run_ids), workflow=NAME, status__in=transitions.UNFINISHED)
            .exclude(app_version=version)
            .values_list("pk", "status", "app_version")
        )
        for run_id, status, old_version in candidates:
            if transitions.stamp(run_id=run_id, from_version=old_version, to_version=version, now=clock.now()):
                stamped.append(Stamped(run_id=run_id, pending=status != RunStatus.QUEUED))
    return stamped


def open_change(*, branch: str = "", title: str = "", by: str | Principal, description: str = "",
                pull_request: str = "", base: str = "main", url: str = "", wait_for_push: float = 0,
                config: ResolvedConfig | None = None) -> Run:
    """Start a `change` run for the branch (or pull request) and its row, in one transaction.
    Bad input is refused before anything is written, naming the field."""
    config = config or get_config()
    fields = {"branch": branch, "title": title, "description": description, "pull_request": pull_request,
              "base": base, "url": url, "wait_for_push": wait_for_push}
    try:
        checked = ChangeInput.model_validate(fields)
    except ValueError as err:
        raise InvalidInput(f"the change cannot be opened: {err}") from None
    repo = checked.url or live.repo_url(config.root)
    if not repo:
        raise InvalidInput("the change cannot be opened: no repository: the live root has no git remote 'origin' "
                           "and SANOMA_REPO_URL is not set")
    principal = principal_of(by)
    check_can_start(principal, NAME)  # who may not open one learns nothing of the repository's branches
    check_branch(url=repo, branch=checked.branch, pull_request=checked.pull_request, base=checked.base,
                 config=config)
    given = {k: v for k, v in checked.model_dump().items() if v not in ("", 0) or k == "title"}
    with transaction.atomic():
        run = run_services.start(workflow=NAME, input=given, started_by=principal, config=config)
        now = clock.now()
        ChangeRun.objects.create(
            run_id=run.id, repo_url=repo, branch=checked.branch or checked.pull_request, base=checked.base,
            title=checked.title or checked.pull_request, description=checked.description,
            pull_request=checked.pull_request, opened_by=principal.id, opened_at=now, change_code=change_code(),
            state=ChangeState.OPENED, updated_at=now)
    return run


def check_branch(*, url: str, branch: str, pull_request: str, base: str, config: ResolvedConfig) -> None:
    """The branch (or pull request) a change is opened for is there at the repository's remote, under
    a name git takes: else refused here, naming it (`invalid_input`, its issue at `branch` or
    `pull_request`), so no run starts only to fail on its first step. A remote that cannot be
    reached just now is not a refusal: the change's run asks it again, with retries."""
    where = "branch" if branch else "pull_request"
    try:
        remote_of(url, config.connectors).resolve(url, branch=branch or None, pull_request=pull_request or None,
                                                  base=base)
    except RemoteError as err:
        if err.code not in (RemoteCode.BRANCH_NOT_FOUND, ErrorCode.INVALID_INPUT, RemoteCode.NOT_MERGEABLE):
            log.warning("opening a change of %s: the remote could not say whether it exists (%s); the change's "
                        "run will ask again", branch or pull_request, err)
            return
        data = err.data if isinstance(err.data, dict) else {}
        path = "base" if "base branch" in data else where
        raise InvalidInput(f"the change cannot be opened: {err.message}",
                           data={"issues": [{"path": [path], "message": err.message, "code": err.code}]}) from None


def notify(*, topic: str, branch: str, sha: str = "", via: str, payload: dict[str, Any] | None = None
           ) -> list[str]:
    """Tell every unfinished change of `branch` what the remote did (`pushed`, `checks_passed`,
    `merged`, `deployed`): a message on that topic, sent once per change, topic and commit, in the
    name of the change's opener (`via` says what brought it: the hook, the webhook). Answers the
    runs told."""
    if topic not in TOPICS:
        raise InvalidInput(f"unknown change event {topic!r}: it is one of {', '.join(TOPICS)}")
    if not branch:
        raise InvalidInput("a change event names its branch")
    told: list[str] = []
    runs = Run.objects.filter(workflow=NAME, status__in=UNFINISHED, pk__in=ChangeRun.objects.filter(
        branch=branch).values("run_id")).values_list("id", "started_by")
    for run_id, opener in runs:
        run_services.send_message(run_id=run_id, topic=topic, by=opener,
                                  payload={"branch": branch, "sha": sha, "via": via, **(payload or {})},
                                  message_id=f"{topic}:{branch}:{sha}" if sha else None)
        told.append(run_id)
    return told


def take_over_deployed(config: ResolvedConfig) -> list[str]:
    """At a worker's start: the change runs that merged and deployed the code this worker runs are
    moved onto its version (when their change workflow is this same code) and told `deployed`.
    Answers the runs told."""
    if config.root is None:
        return []
    candidates = list(ChangeRun.objects.filter(
        state__in=(ChangeState.MERGED, ChangeState.DEPLOYED), deployed_version="", change_code=change_code(),
        run_id__in=Run.objects.filter(workflow=NAME, status__in=UNFINISHED).values("id")))
    # Most starts have none to take over: git is asked only when some change merged.
    if not candidates or live.work_tree_top(config.root) != config.root.resolve():
        return []
    revision = live.head(config.root.resolve())
    told: list[str] = []
    for change in candidates:
        if not change.merged_sha or not _contains(config.root, revision, change.merged_sha):
            continue  # this worker's code is not (yet) the one that change merged
        stamp_version(run_ids=[change.run_id], version=config.version)
        run = Run.objects.get(pk=change.run_id)
        try:
            run_services.send_message(run_id=run.id, topic="deployed", by=run.started_by,
                                      payload={"version": config.version, "revision": revision},
                                      message_id=f"deployed:{config.version}:{revision}")
        except SanomaError as err:
            if err.code != RunCode.RUN_ENDED:
                raise
            continue
        ChangeRun.objects.filter(pk=change.run_id).update(
            state=ChangeState.DEPLOYED, deployed_revision=revision, deployed_version=config.version,
            updated_at=clock.now())
        told.append(change.run_id)
        log.info("change %s: deployed %s, now on %s", change.run_id, revision[:12], config.version)
    return told


def _contains(root: Any, revision: str, merged: str) -> bool:
    try:
        live.git("merge-base", "--is-ancestor", merged, revision, cwd=root)
    except SanomaError:
        return False
    return True


__all__ = ["TOPICS", "check_branch", "notify", "open_change", "take_over_deployed"]
