"""The drivers of `sanoma.local` (this machine's live config root as a deploy target) and of
`sanoma.source.resolve` (where a host's branch points at the repository's remote).

- `sanoma.local.import|read`: `{name, branch, revision}` of the live root (its branch and HEAD).
- `sanoma.local.create|update`: check the declared revision (filled in from `sanoma.source.resolve`
  when drift and apply read the host) of the branch out into the live root, then ask this
  instance's workers to start again on the new code (`runs.worker_lifecycle.request_restart`).
  A retried call finds the root there already and changes nothing (the restart is asked again,
  which a worker started since takes as already done).
- `sanoma.local.delete`: refused: the machine running sanoma is not deleted by it.
- `sanoma.source.resolve`: `{host, branch}` -> `{revision}` through the remote serving the
  repository (`SANOMA_REPO_URL`, else the live root's `origin`).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from changes.lifecycle import live
from changes.lifecycle.remotes import remote_of
from connectors.drivers import CallContext
from connectors.errors import DriverError
from connectors.operations import Connector, op
from runs.worker_lifecycle import request_restart


class SourceInput(BaseModel):
    model_config = {"extra": "forbid"}

    host: str = Field(min_length=1, max_length=300, description="the host resource's id, <file>#<name>")
    branch: str = Field(default="main", min_length=1, max_length=200)


class SourceOutput(BaseModel):
    host: str
    branch: str
    revision: str
    url: str


SOURCE_OPS = {"source": {"resolve": op(
    effect="read", input=SourceInput, output=SourceOutput, idempotent=True, target=lambda i: i.host,
    description="Where a host's branch points at the repository's remote: the revision a deploy checks out")}}


def _observed(root: Path, name: str) -> dict[str, Any]:
    revision = live.head(root)
    return {"id": name, "handle": revision,
            "values": {"name": name, "branch": live.current_branch(root), "revision": revision}}


def local_functions(root: Path | None, connectors: Callable[[], Sequence[Connector]]) -> dict[str, Any]:
    """`{resource: {verb: fn}}` for `sanoma.local` and `sanoma.source` on the live root `root`."""

    def where() -> Path:
        if root is None:
            raise DriverError("the config has no root folder: there is no live root to deploy to", retryable=False)
        return live.check_deployable(root)

    def look(i: Any, c: CallContext) -> dict[str, Any]:
        return _observed(where(), i.id)

    def deploy(i: Any, c: CallContext) -> dict[str, Any]:
        path = where()
        desired = dict(i.desired)
        name, branch, revision = desired["name"], desired.get("branch") or "main", desired.get("revision") or ""
        if not revision:
            raise DriverError(f"the host {name} has no revision to deploy: drift and apply fill it in from "
                              "sanoma.source.resolve", retryable=False)
        url = live.repo_url(path)
        before = live.head(path)
        now = live.check_out(path, url=url, branch=branch, revision=revision)
        if now != before:
            request_restart(why=f"{c.run_id} deployed {revision[:12]} of {branch} to {name}", revision=now)
        return _observed(path, name)

    def refuse_delete(i: Any, c: CallContext) -> dict[str, Any]:
        raise DriverError(f"the host {i.id} is the machine sanoma runs on: it is not deleted by a plan; remove "
                          "its declaration and its deploys stop", retryable=False, status=409, vendor_code="refused")

    def resolve_source(i: Any, c: CallContext) -> dict[str, Any]:
        url = live.repo_url(root)
        head = remote_of(url, connectors()).resolve(url, branch=i.branch)
        return {"host": i.host, "branch": i.branch, "revision": head.sha, "url": url}

    return {"local": {"import": look, "read": look, "create": deploy, "update": deploy, "delete": refuse_delete},
            "source": {"resolve": resolve_source}}


__all__ = ["SOURCE_OPS", "SourceInput", "local_functions"]
