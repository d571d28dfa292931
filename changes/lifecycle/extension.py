"""What the life of a change adds to every resolved config (`runs.config.extensions`): the change's
operations (`sanoma.change.*`, `sanoma.apps.list`) and the built-in `change` workflow.

It is asked after the declared state's provider, so it sees sanoma's own connector when there is
one: then the change plans the tree's resources and deploys to the declared hosts, whose drivers
`install` gives the declared state (`changes.resources.hosts`). Its extension
also takes over, when a worker starts, the change runs that deployed its version, and shows the
change's checks, plan and diff with the approval a merge waits for."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from changes.lifecycle.connector import connector_for
from changes.lifecycle.hosts import SOURCE_OPS, local_functions
from changes.lifecycle.workflow import change_workflow
from changes.resources import hosts
from connectors.drivers import Driver
from connectors.operations import Connector, resource_types
from runs.config import extensions
from runs.config.registry import get_config
from runs.config.workflows import WorkflowDefinition
from runs.extensions import AppExtension
from runs.extensions import install as install_extension

NAME = "changes"


def _plan(drift: dict[str, Any], by: str) -> dict[str, Any]:
    from changes.services import plan  # loads the models: imported when called

    return plan(drift, by=by, config=get_config())


def _workflows() -> list[WorkflowDefinition]:
    """This process's workflows, read when `sanoma.apps.list` is called."""
    return list(get_config().workflows.values())


def provide(request: extensions.Request) -> extensions.Extension:
    connectors = [c for c in request.connectors if isinstance(c, Connector)]
    types = resource_types(connectors)
    connector = connector_for(request.root, lambda: connectors, _workflows, _plan)

    def workflows(ops: Mapping[str, Any], drivers: Mapping[str, Driver]) -> list[WorkflowDefinition]:
        return [change_workflow(types, ops)]

    return extensions.Extension(connectors=[connector], workflows=workflows)


def _merge_approval_extra(approval: Any, full: bool) -> Any:
    from changes.lifecycle.admin import merge_approval_extra  # the desk's: imported when asked

    return merge_approval_extra(approval, full)


def install() -> None:
    """The life of a change's extension of the engine (`runs.extensions`); called from the app's
    `ready()`, once the models are loaded."""
    from changes.lifecycle.services import take_over_deployed

    # The hosts the data files declare deploy through the live root (sanoma's own connector, which
    # the declared state's provider adds, carries them), and the change's own operations follow.
    hosts.install(hosts.Hosts(operations=SOURCE_OPS, functions=local_functions))
    install_extension(AppExtension(name=NAME, config=provide, worker_start=take_over_deployed,
                                   approval_extras=_merge_approval_extra))


__all__ = ["NAME", "install", "provide"]
