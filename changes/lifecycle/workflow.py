"""The built-in `change` workflow: the life of a change to the company's repo.

Input: `{branch, title, description?}` (or `{pull_request, title?}`), with `base` (default `main`),
`url` (default: the live root's repository) and `wait_for_push` (seconds a change whose checks
failed waits for a new push before it ends `checks_failed`; 0, the default, ends it at once).

1. `sanoma.change.resolve`: the branch's head.
2. `sanoma.change.check`: the head's tree checked in its own process (with what it brings into
   the base, its diff, for the merge's approver), and the live work in flight proven against it
   (`in_flight`: which parked runs it migrates and pins, which held calls its policies release,
   reassign or refuse). Failed: wait for `pushed` (then from 1 again) or end `checks_failed`,
   naming each problem at `file:line`.
3. The tree's declared resources read at their vendors through `ctx` (drift's imports), then
   `sanoma.change.plan`: what apply would do, each call with the policy's verdict.
4. `sanoma.change.merge`, its head pinned, with what it does to the work in flight (counts the
   policy reads as `context.input.in_flight`, and the sentence its approval shows); the policy may
   hold it for an approver. The branch moved since its checks (`head_changed`): from 1 again, so
   what merges is what was checked.
5. Deploy: apply the declared **host** resources (their revision is now the merge). A host that
   moved asks the workers to start again on the new code; the run waits for `deployed`, which the
   new version's worker sends once it has stamped this run onto its version (only when its change
   workflow is this same code: `change_code`).
6. On the new version: apply what the change's plan showed (the resources it changes, nothing
   else), and finish with the revision and version deployed.

Everything the body decides on comes from recorded calls and messages, so it replays the same on
the old version and on the new one.
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, model_validator

from changes.lifecycle import in_flight
from changes.lifecycle.checks import problems_of
from changes.lifecycle.errors import RemoteCode
from changes.resources.workflows import (
    READ_OP,
    RECORD_OP,
    SOURCE_OP,
    apply_observed,
    call_op,
    observe,
    part_of,
    report_of,
)
from connectors.errors import ErrorCode, SanomaError, error_code
from connectors.operations import Operation
from connectors.resources import ResourceType
from runs.config.workflows import WorkflowDefinition, define_workflow
from runs.errors import RunCode

NAME = "change"
OPS = ("sanoma.change.resolve", "sanoma.change.check", "sanoma.change.plan", "sanoma.change.merge")
MAX_ROUNDS = 50  # new heads a change follows before it gives up (a push loop is a mistake, not a change)


class ChangeInput(BaseModel):
    model_config = {"extra": "forbid"}

    branch: str = Field(default="", max_length=200, pattern=r"^$|^[A-Za-z0-9._/-]+$")
    pull_request: str = Field(default="", max_length=500)
    title: str = Field(default="", max_length=200)
    description: str = Field(default="", max_length=5000)
    base: str = Field(default="main", min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._/-]+$")
    url: str = Field(default="", max_length=500)
    wait_for_push: float = Field(default=0, ge=0, le=30 * 24 * 3600)

    @model_validator(mode="after")
    def _what(self) -> ChangeInput:
        if bool(self.branch) == bool(self.pull_request):
            raise ValueError("give the branch to merge, or a pull request's URL: one of them")
        if self.branch and not self.title.strip():
            raise ValueError("a change from a branch needs a title")
        if self.branch and self.branch == self.base:
            raise ValueError(f"the branch is the base ({self.base}): a change merges another branch into it")
        return self


def change_code() -> str:
    """A hash of this workflow's own code: a change run moves onto a new version only when the new
    version's change workflow is the same code, so it replays there as it ran here."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def _checks_failed(report: Any) -> SanomaError:
    lines = problems_of({"checks": report.checks})
    return SanomaError(f"the checks of {report.sha[:12]} failed:\n" + "\n".join(f"- {line}" for line in lines),
                       code=RemoteCode.CHECKS_FAILED, data={"sha": report.sha, "failed": list(report.failed),
                                                           "problems": lines[:50]})


def _changed(head: Any, live: Any) -> tuple[set[str], set[str]]:
    """The resources the head declares that the live root does not (or declares otherwise), and the
    types of those the live root declares and the head no longer does."""
    mine = {r["id"]: r for r in part_of(head, "resources")}
    theirs = {r["id"]: r for r in part_of(live, "resources")}
    changed = {rid for rid, r in mine.items()
               if rid not in theirs or (r.get("type"), r.get("values")) != (theirs[rid].get("type"),
                                                                            theirs[rid].get("values"))}
    removed_types = {r.get("type") or "" for rid, r in theirs.items() if rid not in mine}
    return changed, removed_types


def _hosts(types: Mapping[str, ResourceType]) -> Any:
    return lambda change: bool(types.get(change["type"]) and types[change["type"]].host)


def change_body(types: Mapping[str, ResourceType], declares: bool) -> Any:
    """The body; `declares` says whether the config has the declared-state layer (data files,
    resource types): without it a change is checked and merged, and there is nothing to deploy."""

    def change(ctx: Any, input: ChangeInput) -> dict[str, Any]:
        ask = {"url": input.url, "branch": input.branch, "pull_request": input.pull_request, "base": input.base}
        head: Any = None
        merged: Any = None
        plan: Any = None
        for _round in range(MAX_ROUNDS):
            head = ctx.sanoma.change.resolve(ask)
            report = ctx.sanoma.change.check({"url": head.url, "branch": head.branch, "sha": head.sha,
                                              "base": head.base})
            if not report.ok:
                if not input.wait_for_push:
                    raise _checks_failed(report)
                try:
                    ctx.wait_message("pushed", timeout=input.wait_for_push)
                except SanomaError as err:
                    if error_code(err) == RunCode.WAIT_TIMED_OUT:
                        raise _checks_failed(report) from None
                    raise
                continue
            if declares:
                # The plan shows what this change changes: the resources it declares anew or differently,
                # and deletes of the types whose declarations it removes; other drift is not its own.
                changed, removed_types = _changed(report.declared, call_op(ctx, READ_OP, {}))
                seen = observe(ctx, types, read=report.declared)
                plan = ctx.sanoma.change.plan({"sha": head.sha, "drift": report_of(seen), "only": sorted(changed),
                                               "delete_types": sorted(removed_types)})
            flight = report.in_flight or {}
            try:
                merged = ctx.sanoma.change.merge({
                    "url": head.url, "branch": head.branch, "head_sha": head.sha, "base": head.base,
                    "title": input.title or head.title or head.branch, "description": input.description,
                    "in_flight": in_flight.counts(flight),
                    "work_in_flight": in_flight.words(flight)})
            except SanomaError as err:
                if error_code(err) == RemoteCode.HEAD_CHANGED:
                    continue  # what merges must be what was checked: check the new head first
                raise
            break
        if merged is None:
            raise SanomaError(f"the branch moved {MAX_ROUNDS} times during its change: open a new change once it "
                              "settles", code=RemoteCode.HEAD_CHANGED)
        out: dict[str, Any] = {"branch": head.branch, "head": head.sha, "merged": merged.sha, "base": merged.base,
                               "plan": plan.summary if plan is not None else {}}
        if not declares:
            return {**out, "deployed": None}
        deploy = apply_observed(ctx, types, observe(ctx, types), keep=_hosts(types))
        if deploy["summary"]["failed"] or deploy["summary"]["skipped"]:
            failed = [c for c in deploy["changes"] if c["status"] != "done"]
            raise SanomaError(f"the deploy failed: {failed[0]['resource']}: {failed[0]['error']['message']}",
                              code=failed[0]["error"].get("code") or ErrorCode.DRIVER_FAILED,
                              data={"deploy": deploy["summary"]})
        deployed: dict[str, Any] = {"hosts": [c["resource"] for c in deploy["changes"]]}
        if deployed["hosts"]:
            # The workers start again on the new code; the new version's worker stamps this run
            # onto its version and says so.
            message = ctx.wait_message("deployed")
            deployed.update(version=message.get("version"), revision=message.get("revision"))
        # What the change's plan showed, and only that: drift the change did not make is not its to apply.
        planned = {(c.get("type"), c.get("import_id")) for c in (plan.changes if plan is not None else [])}
        applied = apply_observed(ctx, types, observe(ctx, types),
                                 keep=lambda c: not _hosts(types)(c) and (c.get("type"), c.get("import_id")) in planned)
        return {**out, "deployed": deployed, "applied": applied["summary"]}

    return change


def change_workflow(types: Mapping[str, ResourceType], ops: Mapping[str, Operation]) -> WorkflowDefinition:
    """The built-in `change` over these resource types and operations."""
    declares = READ_OP in ops
    uses: list[Any] = [ops[op_id] for op_id in OPS]
    if declares:
        uses += [ops[op_id] for op_id in (READ_OP, RECORD_OP, SOURCE_OP) if op_id in ops]
        uses += [ops[rt.op_id(verb)] for rt in types.values() for verb in ("import", "create", "update", "delete")
                 if rt.op_id(verb) in ops]
    definition = define_workflow(name=NAME, run=change_body(types, declares), uses=[*uses, "wait_message"],
                                 input=ChangeInput,
                                 title="The life of a change: checks, the merge, the deploy to the declared hosts")
    return replace(definition, builtin=True, file=__file__)


__all__ = ["NAME", "ChangeInput", "change_body", "change_code", "change_workflow"]
