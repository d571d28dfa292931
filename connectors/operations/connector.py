"""A connector: a vendor's operations, resource types and vendor info, declared with
`define_connector(...)`."""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pydantic import BaseModel

from connectors.limits import Limit, check_limit
from connectors.operations.operation import _ID_PART, Operation, OperationSpec
from connectors.resources import ResourceType

# `ctx.<vendor>` reaches a connector, so a vendor may not be named like a member of `ctx` itself:
# `ctx.all` would be the built-in, never the vendor. A test keeps this list in step with `ctx`.
# Names `ctx` gives to its built-ins, and `data`, the built-in vendor of the company's collections.
RESERVED_VENDOR_NAMES = ("all", "approval", "continue_as_new", "data", "now", "patched", "run_id", "sleep",
                         "start_run", "tag", "wait_message", "wait_run")


_SVG = re.compile(r"^\s*<svg[\s>].*</svg>\s*$", re.DOTALL)


@dataclass(frozen=True)
class VendorInfo:
    title: str | None = None
    logo: str | None = None
    logo_dark: str | None = None
    homepage: str | None = None
    package: str | None = None


@dataclass(frozen=True, eq=False)
class Connector:
    """A vendor's operations by id, its info, and the halves attached with `with_setup`."""

    vendor: str
    operations: Mapping[str, Operation]
    info: VendorInfo = field(default_factory=VendorInfo)
    driver: Callable[[], Any] | None = None
    fake: Callable[[Path | None], Any] | None = None  # called with the fake's state file, or None
    steps: Any = None
    # Makes its remote half (`connectors.remotes.Remote`): how a change reaches repositories it hosts.
    remote: Callable[[], Any] | None = None
    # The environment its driver needs: a pydantic model whose fields are the variables' names.
    environment: type[BaseModel] | None = None
    # Its resource types by name (`define_connector(..., types=[...])`), each bound to this vendor.
    types: Mapping[str, ResourceType] = field(default_factory=dict)
    # One rate and concurrency budget shared by all its operations (`connectors.limits`), if declared.
    limit: Limit | None = None

    def op(self, op_id: str) -> Operation:
        try:
            return self.operations[op_id]
        except KeyError:
            raise KeyError(f"{self.vendor} has no operation {op_id}") from None

    def resource_type(self, name: str) -> ResourceType:
        try:
            return self.types[name]
        except KeyError:
            known = ", ".join(sorted(self.types)) or "none"
            raise KeyError(f"{self.vendor} has no resource type {name} (its types: {known})") from None

    def __getattr__(self, name: str) -> ResourceType:
        # `shop.product`: a resource type, as a data file writes it. Only for names that are not
        # attributes of the connector itself (define_connector refuses a type named like one).
        types = self.__dict__.get("types")
        if name.startswith("_") or not types or name not in types:
            raise AttributeError(f"{type(self).__name__} {self.__dict__.get('vendor')!r} has no attribute or "
                                 f"resource type {name!r}")
        return types[name]


def _check_svg(what: str, svg: str | None) -> None:
    if svg is None:
        return
    if not isinstance(svg, str) or not _SVG.match(svg) or svg.count("<svg") != 1:
        raise ValueError(f"{what} must be one <svg>...</svg> element with only whitespace around it")


def _check_info(vendor: str, info: VendorInfo | None) -> VendorInfo:
    if info is None:
        return VendorInfo()
    if not isinstance(info, VendorInfo):
        raise TypeError(f"connector {vendor}: info must be a VendorInfo")
    _check_svg(f"connector {vendor}: logo", info.logo)
    _check_svg(f"connector {vendor}: logo_dark", info.logo_dark)
    if info.homepage is not None:
        parsed = urlparse(info.homepage)
        if parsed.scheme != "https" or not parsed.netloc:
            raise ValueError(f"connector {vendor}: homepage must be an https: URL; got {info.homepage!r}")
    return info


def define_connector(
    vendor: str,
    resources: Mapping[str, Mapping[str, OperationSpec[Any, Any]]] | type,
    *,
    info: VendorInfo | None = None,
    environment: type[BaseModel] | None = None,
    types: Sequence[ResourceType] = (),
    limit: Limit | None = None,
) -> Connector:
    """A connector: `resources` maps each resource to its operations by name, or is a class whose
    nested classes are the resources and their `op(...)` attributes the operations:

        class Shop:
            class order:
                get = op(effect="read", input=OrderRef, output=Order)
        shop = define_connector("shop", Shop)

    The class form types `ctx`: a `Ctx` protocol of the company's own with `shop: Shop` lets mypy
    check each call's input and output. An operation's id is `<vendor>.<resource>.<name>`.
    `environment` is a pydantic model naming the variables its driver reads (each field a variable:
    its description, default, checks).
    `types` are its resource types (`define_resource`): each adds the operations
    `<vendor>.<type>.import|read|create|update|delete` (see `connectors.resources`).
    `limit=Limit(rate="25/s", concurrency=4)` is one budget for all its operations' calls, across every
    worker (an operation may declare one of its own as well; see `connectors.limits`).
    """
    if environment is not None and not (isinstance(environment, type) and issubclass(environment, BaseModel)):
        raise TypeError(f"connector {vendor}: environment must be a pydantic model class")
    if not isinstance(vendor, str) or not _ID_PART.match(vendor):
        raise ValueError(f"vendor {vendor!r} must be lowercase letters, digits, dashes and underscores")
    if vendor in RESERVED_VENDOR_NAMES:
        raise ValueError(
            f"vendor {vendor!r} is taken by ctx.{vendor}, which workflows use; name the connector after its vendor "
            f"(taken: {', '.join(RESERVED_VENDOR_NAMES)})"
        )
    operations: dict[str, Operation] = {}
    for resource, specs in _resources_of(vendor, resources).items():
        if not _ID_PART.match(resource):
            raise ValueError(f"connector {vendor}: resource {resource!r} must be a lowercase name")
        for name, spec in specs.items():
            if not _ID_PART.match(name):
                raise ValueError(f"connector {vendor}: operation {resource}.{name} needs a lowercase name")
            if not isinstance(spec, OperationSpec):
                raise TypeError(f"connector {vendor}: {resource}.{name} must be declared with op(...)")
            op_id = f"{vendor}.{resource}.{name}"
            operations[op_id] = Operation(
                id=op_id,
                vendor=vendor,
                resource=resource,
                name=name,
                effect=spec.effect,
                input=spec.input,
                output=spec.output,
                idempotent=spec.idempotent,
                description=spec.description,
                target=spec.target,
                opaque=spec.opaque,
                phrases=spec.phrases,
                timeout=spec.timeout,
                retry=spec.retry,
                idempotency_key=spec.idempotency_key,
                summary=spec.summary,
                reconcile=f"{vendor}.{resource}.{spec.reconcile}" if spec.reconcile else None,
                approve_each_target=spec.approve_each_target,
                money=spec.money,
                limit=spec.limit,
            )
    _check_reconciles(vendor, operations)
    bound = _bind_types(vendor, types, operations)
    limit = check_limit(limit, where=f"connector {vendor}", inputs=[o.input for o in operations.values()])
    if limit is not None:
        operations = {op_id: dataclasses.replace(o, vendor_limit=limit) for op_id, o in operations.items()}
    return Connector(vendor=vendor, operations=operations, info=_check_info(vendor, info), environment=environment,
                     types=bound, limit=limit)


def _resources_of(vendor: str, resources: Any) -> Mapping[str, Mapping[str, Any]]:
    """The resources and their operations, from a mapping or a class of classes."""
    if not isinstance(resources, type):
        if not isinstance(resources, Mapping):
            raise TypeError(f"connector {vendor}: resources map each resource to its operations, "
                            f'{{"order": {{"get": op(...)}}}}, or are a class of classes (class order: get = op(...))')
        return resources
    found: dict[str, dict[str, Any]] = {}
    for name, value in vars(resources).items():
        if name.startswith("_"):
            continue
        if not isinstance(value, type):
            raise TypeError(f"connector {vendor}: {resources.__name__}.{name} must be a class holding the operations "
                            f"of the resource {name} (class {name}: get = op(...))")
        found[name] = {n: v for n, v in vars(value).items() if not n.startswith("_")}
    return found


# Names a resource type may not take: `shop.<name>` would be the connector's own attribute.
_CONNECTOR_ATTRIBUTES = frozenset(
    {f.name for f in dataclasses.fields(Connector)} | {name for name in dir(Connector) if not name.startswith("_")}
)


def _bind_types(
    vendor: str, types: Sequence[ResourceType], operations: dict[str, Operation]
) -> dict[str, ResourceType]:
    """Each type bound to `vendor`, its derived operations added to `operations`."""
    if isinstance(types, (str, ResourceType)) or not isinstance(types, (list, tuple)):
        raise TypeError(f"connector {vendor}: types is a list of define_resource(...) types")
    bound: dict[str, ResourceType] = {}
    for rt in types:
        if not isinstance(rt, ResourceType):
            raise TypeError(f"connector {vendor}: types lists {rt!r}, which is not a define_resource(...) type")
        if rt.name in bound:
            raise ValueError(f"connector {vendor}: two resource types are named {rt.name}")
        if rt.name in _CONNECTOR_ATTRIBUTES:
            raise ValueError(f"connector {vendor}: a resource type may not be named {rt.name!r}: {vendor}.{rt.name} "
                             f"is the connector's own attribute")
        typed = rt.bound(vendor)
        bound[rt.name] = typed
        for operation in _derived_operations(typed):
            if operation.id in operations:
                raise ValueError(f"connector {vendor}: {operation.id} is declared in resources and derived from the "
                                 f"resource type {rt.name}: rename the declared operation")
            operations[operation.id] = operation
    return bound


def _derived_operations(rt: ResourceType) -> list[Operation]:
    vendor = rt.vendor or ""
    models = rt.models

    def by_id(i: Any) -> str:
        return f"{rt.name}/{i.id}"

    def by_desired(i: Any) -> str:
        return f"{rt.name}/{rt.import_id(i.desired)}"

    # What one call does, for the person asked to approve it: the instance by its import id, or by
    # its identity's declared values for a create (which has no id yet).
    identity = ", ".join(f"{name} {{desired.{name}}}" for name in rt.identity)
    made = [
        ("import", "read", True, by_id, f"Find a {rt.title} by its import id", f"Find the {rt.title} {{id}}"),
        ("read", "read", True, by_id, f"Read a {rt.title} as the vendor holds it", f"Read the {rt.title} {{id}}"),
        ("create", rt.effects["create"], False, by_desired, f"Create a {rt.title}",
         f"Create a {rt.title}: {identity}"),
        ("update", rt.effects["update"], True, by_id, f"Change a {rt.title}", f"Change the {rt.title} {{id}}"),
        ("delete", rt.effects["delete"], True, by_id, f"Delete a {rt.title}", f"Delete the {rt.title} {{id}}"),
    ]
    return [
        Operation(
            id=f"{vendor}.{rt.name}.{verb}",
            vendor=vendor,
            resource=rt.name,
            name=verb,
            effect=effect,
            input=models[verb],
            output=models["output"],
            idempotent=idempotent,
            description=description,
            target=target,
            opaque=("handle",),
            summary=summary,
        )
        for verb, effect, idempotent, target, description, summary in made
    ]


def resource_types(connectors: Sequence[Connector]) -> dict[str, ResourceType]:
    """Every connector's resource types by key, `<vendor>.<type>`."""
    return {rt.key: rt for connector in connectors for rt in connector.types.values()}


def _check_reconciles(vendor: str, operations: Mapping[str, Operation]) -> None:
    """A reconcile is a read of the same connector taking the call's own input and answering
    `{happened: bool, output: ...}`."""
    for operation in operations.values():
        if operation.reconcile is None:
            continue
        read = operations.get(operation.reconcile)
        where = f"connector {vendor}: {operation.id} reconciles with {operation.reconcile}"
        if read is None:
            raise ValueError(f"{where}, which it does not declare")
        if read.effect != "read" or not read.idempotent:
            raise ValueError(f"{where}, which must be an idempotent read")
        if read.input is not operation.input:
            raise ValueError(f"{where}, which must take the same input model ({operation.input.__name__})")
        if not {"happened", "output"} <= set(read.output.model_fields):
            raise ValueError(f"{where}, whose output must have the fields happened and output")
