"""What the life of a change adds to every resolved config (`runs.config.extensions`): the change's
operations (`sanoma.change.*`, `sanoma.apps.list`) and the built-in `change` workflow.

It is asked after the declared state's provider, so it sees sanoma's own connector when there is
one: then the change plans the tree's resources and deploys to the declared hosts, whose drivers
`install` gives the declared state (`changes.resources.hosts`)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.module_loading import import_string

from changes.lifecycle.connector import connector_for
from changes.lifecycle.hosts import SOURCE_OPS, local_functions
from changes.lifecycle.workflow import change_workflow
from changes.resources import hosts
from connectors.drivers import Driver
from connectors.operations import Connector, resource_types
from runs.config import extensions
from runs.config.registry import get_config
from runs.config.workflows import WorkflowDefinition

NAME = "changes"


def _plan(drift: dict[str, Any], by: str) -> dict[str, Any]:
    # Named, not imported: the services load the models, and this module loads with the app's setup.
    plan = import_string("changes.resources.services.plan")
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


def install() -> None:
    # The hosts the data files declare deploy through the live root (sanoma's own connector, which
    # the declared state's provider adds, carries them), and the change's own operations follow.
    hosts.install(hosts.Hosts(operations=SOURCE_OPS, functions=local_functions))
    extensions.register(NAME, provide)


__all__ = ["NAME", "install", "provide"]
