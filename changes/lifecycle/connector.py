"""The change's own operations, on sanoma's vendor `sanoma`, in every config:

- `sanoma.change.resolve` (read): where the change's branch (or pull request) points now.
- `sanoma.change.check` (read): the checks of that commit's tree, in a process of their own, and
  what the commit brings into the base (its diff), for whoever approves the merge.
- `sanoma.change.plan` (read): what apply would do at the vendors for the tree's declared
  resources (read by the change through `ctx`), each call with the verdict the policy would give.
- `sanoma.change.merge` (write): merge the branch through the repository's remote, its head
  pinned. The policy names it, so a company holds merges for an approver (`@approve`).
- `sanoma.apps.list` (read): the config's apps and their workflows.

Each notes how far its change got on the change's row (`ChangeRun`), read by the changes page.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from django.apps import apps
from django.conf import settings
from pydantic import BaseModel, Field, model_validator

from changes.lifecycle import checks, live
from changes.lifecycle.diff import diff_of
from changes.lifecycle.in_flight import UNPROVEN, WORDS_MAX
from changes.lifecycle.in_flight import add_to as add_in_flight
from changes.lifecycle.remotes import RemoteEnvironment, remote_of
from changes.lifecycle.states import ChangeState
from changes.resources import managed
from changes.resources.people import VENDOR
from connectors.drivers import CallContext, Driver, define_driver
from connectors.operations import Connector, define_connector, op, with_setup
from runs.engine import clock

BRANCH = r"^[A-Za-z0-9._/-]+$"
SHA = r"^[0-9a-f]{7,64}$"


class ResolveInput(BaseModel):
    model_config = {"extra": "forbid"}

    url: str = Field(default="", max_length=500, description="the repository (empty: the live root's)")
    branch: str = Field(default="", max_length=200, pattern=r"^$|" + BRANCH[1:])
    pull_request: str = Field(default="", max_length=500)
    base: str = Field(default="main", min_length=1, max_length=200, pattern=BRANCH)

    @model_validator(mode="after")
    def _one(self) -> ResolveInput:
        if bool(self.branch) == bool(self.pull_request):
            raise ValueError("give a branch or a pull request, one of them")
        return self


class Head(BaseModel):
    url: str
    branch: str
    sha: str
    base: str
    pull_request: str | None = None
    title: str = ""


class CheckInput(BaseModel):
    model_config = {"extra": "forbid"}

    url: str = Field(min_length=1, max_length=500)
    branch: str = Field(min_length=1, max_length=200, pattern=BRANCH)
    sha: str = Field(pattern=SHA)
    base: str = Field(default="main", min_length=1, max_length=200, pattern=BRANCH)


class Report(BaseModel):
    ok: bool
    sha: str
    failed: list[str] = Field(default_factory=list)
    checks: list[dict[str, Any]] = Field(default_factory=list)
    declared: dict[str, Any] = Field(default_factory=dict)
    # What the commit brings into the base (`changes.lifecycle.diff_of`): what an approver lets merge.
    diff: dict[str, Any] = Field(default_factory=dict)
    # What the merge would do to the live work in flight (`changes.lifecycle.in_flight`).
    in_flight: dict[str, Any] = Field(default_factory=dict)


class PlanInput(BaseModel):
    model_config = {"extra": "forbid"}

    sha: str = Field(pattern=SHA)
    drift: dict[str, Any]
    # Only these resources' changes (None: every change), and deletes of these types.
    only: list[str] | None = None
    delete_types: list[str] = Field(default_factory=list)


class Plan(BaseModel):
    changes: list[dict[str, Any]] = Field(default_factory=list)
    summary: dict[str, Any] = Field(default_factory=dict)
    empty: bool = True
    holds: dict[str, int] = Field(default_factory=dict)
    drift: dict[str, Any] = Field(default_factory=dict)
    problems: list[Any] = Field(default_factory=list)


class InFlightCounts(BaseModel):
    """What the merge does to the work in flight, as its policy reads it (`context.input.in_flight`)."""

    model_config = {"extra": "forbid"}

    migrates: int = Field(default=0, ge=0, description="parked runs the head's code migrates")
    pins: int = Field(default=0, ge=0, description="parked runs that stay pinned to their own code")
    releases: int = Field(default=0, ge=0, description="held calls the head's policies now allow")
    reassigns: int = Field(default=0, ge=0, description="held calls the head's policies hold for another approver")
    refuses: int = Field(default=0, ge=0, description="held calls the head's policies now deny")


class MergeInput(BaseModel):
    model_config = {"extra": "forbid"}

    url: str = Field(min_length=1, max_length=500)
    branch: str = Field(min_length=1, max_length=200, pattern=BRANCH)
    head_sha: str = Field(pattern=SHA)
    base: str = Field(default="main", min_length=1, max_length=200, pattern=BRANCH)
    title: str = Field(default="", max_length=200)
    description: str = Field(default="", max_length=5000)
    in_flight: InFlightCounts = Field(default_factory=InFlightCounts)
    # The same in words, for the approval's summary ("migrates 41 parked runs, pins 3: ...").
    work_in_flight: str = Field(default=UNPROVEN, min_length=1, max_length=WORDS_MAX)


class Merged(BaseModel):
    sha: str
    base: str
    head_sha: str
    fast_forward: bool = False
    pull_request: str | None = None
    already: bool = False


class AppsInput(BaseModel):
    model_config = {"extra": "forbid"}


class AppsOutput(BaseModel):
    apps: list[dict[str, Any]] = Field(default_factory=list)


def change_connector() -> Connector:
    """The operations, their driver not yet attached (see `connector_for`)."""
    # The checks' process, then the in-flight proof's two processes, each with its own limit.
    timeout = (float(settings.SANOMA_CHECKS_TIMEOUT_SECONDS) + 2 * float(settings.SANOMA_IN_FLIGHT_TIMEOUT_SECONDS)
               + 60)
    # The built-in remotes' variables (GITHUB_TOKEN, the webhook secret) are this connector's, so the
    # credentials store takes them.
    return define_connector(VENDOR, {
        "change": {
            "resolve": op(effect="read", input=ResolveInput, output=Head, idempotent=True,
                          target=lambda i: i.branch or i.pull_request,
                          description="Where the change's branch (or pull request) points now"),
            "check": op(effect="read", input=CheckInput, output=Report, idempotent=True, timeout=timeout,
                        target=lambda i: i.branch,
                        description="Check the commit's tree in its own process: config, Django's checks, "
                                    "lint, scenarios, declared resources; and prove the live work in flight "
                                    "against it"),
            "plan": op(effect="read", input=PlanInput, output=Plan, idempotent=True,
                       description="What apply would change at the vendors, each call with the policy's verdict"),
            # Approved per commit: a push after the approval needs an approval of its own.
            "merge": op(effect="write", input=MergeInput, output=Merged, idempotent=True,
                        target=lambda i: f"{i.branch}@{i.head_sha}", approve_each_target=True,
                        summary="Merge {branch} ({head_sha}) into {base}: {work_in_flight}",
                        description="Merge the branch through the repository's remote, its head pinned"),
        },
        "apps": {
            "list": op(effect="read", input=AppsInput, output=AppsOutput, idempotent=True,
                       description="The config's apps and their workflows"),
        },
    }, environment=RemoteEnvironment)


def note(run_id: str, **fields: Any) -> None:
    """What a change's operation learned, on the change's row (when the run is a change)."""
    # Through the registry: this module loads with the app's setup, before the models do.
    apps.get_model("lifecycle", "ChangeRun").objects.filter(run_id=run_id).update(updated_at=clock.now(), **fields)


def connector_for(root: Path | None, connectors: Callable[[], Sequence[Connector]],
                  workflows: Callable[[], Sequence[Any]], plan: Callable[[dict[str, Any], str], dict[str, Any]]
                  ) -> Connector:
    """The connector with its driver: remotes found among `connectors()`, the plan made by `plan`."""
    connector = change_connector()

    def resolve(i: ResolveInput, c: CallContext) -> dict[str, Any]:
        url = i.url or live.repo_url(root)
        head = remote_of(url, connectors()).resolve(url, branch=i.branch or None,
                                                    pull_request=i.pull_request or None, base=i.base)
        note(c.run_id, head_sha=head.sha, state=ChangeState.CHECKING, repo_url=url, branch=head.branch,
             pull_request=head.pull_request or "")
        return head.as_dict()

    def check(i: CheckInput, c: CallContext) -> dict[str, Any]:
        remote = remote_of(i.url, connectors())
        live_root = root or Path(settings.SANOMA_ROOT)

        def prove(report: dict[str, Any], tree: Path) -> dict[str, Any]:
            # The change's own run is in flight too; it moves by its own stamp, not by the proof.
            return add_in_flight(report, tree, live_root=live_root, leave_out=[c.run_id],
                                    timeout=float(settings.SANOMA_IN_FLIGHT_TIMEOUT_SECONDS))

        report = checks.run(remote, url=i.url, sha=i.sha, root_name=live_root.name,
                            timeout=float(settings.SANOMA_CHECKS_TIMEOUT_SECONDS), then=prove)
        # The tree's declared resources with what earlier applies created: the read apply plans from.
        report.setdefault("declared", {})["managed"] = managed.rows()
        report["diff"] = diff_of(remote, url=i.url, sha=i.sha, base=i.base)
        # Passed is passed, whether a plan follows (a tree with data files) or not.
        note(c.run_id, checks=report, state=ChangeState.CHECKS_PASSED if report["ok"] else ChangeState.CHECKS_FAILED)
        return report

    def make_plan(i: PlanInput, c: CallContext) -> dict[str, Any]:
        made = plan(i.drift, c.by or "")
        if i.only is not None:
            made = _only(made, set(i.only), set(i.delete_types))
        note(c.run_id, plan=made, state=ChangeState.CHECKS_PASSED)
        return made

    def merge(i: MergeInput, c: CallContext) -> dict[str, Any]:
        merged = remote_of(i.url, connectors()).merge(i.url, branch=i.branch, head_sha=i.head_sha, base=i.base,
                                                      title=i.title, message=i.description)
        note(c.run_id, merged_sha=merged.sha, state=ChangeState.MERGED)
        return merged.as_dict()

    def apps(i: AppsInput, c: CallContext) -> dict[str, Any]:
        by_app: dict[str, list[str]] = {}
        for wf in workflows():
            if wf.app:
                by_app.setdefault(wf.app, []).append(wf.name)
        return {"apps": [{"name": name, "workflows": sorted(names)} for name, names in sorted(by_app.items())]}

    def make_driver() -> Driver:
        return define_driver(connector, {"change": {"resolve": resolve, "check": check, "plan": make_plan,
                                                    "merge": merge},
                                         "apps": {"list": apps}})

    return with_setup(connector, driver=make_driver)


def _only(made: dict[str, Any], resources: set[str], delete_types: set[str]) -> dict[str, Any]:
    """The plan narrowed to these resources' changes (and deletes of these types), its counts and
    holds counted again."""
    kept = [c for c in made["changes"]
            if c.get("resource") in resources or (c.get("resource") is None and c.get("type") in delete_types)]
    counts = dict.fromkeys(made.get("summary", {}), 0)
    holds: dict[str, int] = {}
    for change in kept:
        counts[change["action"]] = counts.get(change["action"], 0) + 1
        for call in change.get("calls", []):
            if call.get("verdict", {}).get("decision") == "held":
                approver = call["verdict"].get("approver") or ""
                holds[approver] = holds.get(approver, 0) + 1
    return {**made, "changes": kept, "summary": counts, "empty": not kept, "holds": holds}




__all__ = ["change_connector", "connector_for", "note"]
