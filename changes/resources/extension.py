"""What the declared state adds to a resolved config (`runs.config.extensions`): the `sanoma`
connector (people, groups, the data files), every resource type's driver sealed (write-only values
filled in at call time, the managed table kept), and the built-in workflows `drift` and `apply`.

They are there whenever the config has a resource type or a root with data files (people and
groups are always available to declare). The people and groups the data files declare are also
whom a policy's `@approve` may name (the extension's `declared_approvers`)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from changes.resources.people import VENDOR, connector_for, declared_names
from changes.resources.sealing import seal
from changes.resources.workflows import builtin_workflows
from connectors.drivers import Driver
from connectors.operations import Connector, resource_types
from runs.config import extensions
from runs.config.datafiles import data_files
from runs.config.workflows import WorkflowDefinition
from runs.extensions import AppExtension
from runs.extensions import install as install_extension

NAME = "resources"


def provide(request: extensions.Request) -> extensions.Extension | None:
    connectors = [c for c in request.connectors if isinstance(c, Connector)]
    theirs = resource_types(connectors)
    has_files = request.root is not None and bool(data_files(request.root))
    if not theirs and not has_files:
        return None
    if any(c.vendor == VENDOR for c in connectors):
        return extensions.Extension(problems=(
            f'connectors lists a connector named "{VENDOR}", the vendor of sanoma\'s own people, groups and data '
            "files: name it after its vendor",))
    builtin = connector_for(request.root, connectors)
    types = {**theirs, **resource_types([builtin])}
    sealed: dict[int, Driver] = {}

    def wrap(op_id: str, driver: Driver) -> Driver:
        if id(driver) not in sealed:
            sealed[id(driver)] = seal(driver, types)
        return sealed[id(driver)]

    def workflows(ops: Mapping[str, Any], drivers: Mapping[str, Driver]) -> list[WorkflowDefinition]:
        return builtin_workflows(types, ops)

    return extensions.Extension(connectors=[builtin], wrap=wrap, workflows=workflows)


def install() -> None:
    """The declared state's extension of the engine (`runs.extensions`)."""
    install_extension(AppExtension(name=NAME, config=provide, declared_approvers=declared_names))


__all__ = ["NAME", "install", "provide"]
