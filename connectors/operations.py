"""Declaring what a vendor can do: connectors, their operations and vendor info.

Plain Python: importable without Django, so a company's files can be read without a database.
"""
from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import urlparse

from pydantic import BaseModel

from connectors.money import Money, MoneyRule, amount_field, check_money, format_money
from connectors.resources import ResourceType

EFFECTS = ("read", "write", "publish", "send", "money", "access")
Effect = Literal["read", "write", "publish", "send", "money", "access"]

# `ctx.<vendor>` reaches a connector, so a vendor may not be named like a member of `ctx` itself:
# `ctx.all` would be the built-in, never the vendor. A test keeps this list in step with `ctx`.
# Names `ctx` gives to its built-ins, and `data`, the built-in vendor of the company's collections.
RESERVED_VENDOR_NAMES = ("all", "approval", "data", "now", "run_id", "sleep", "start_run", "tag", "wait_message",
                         "wait_run")
_ID_PART = re.compile(r"^[a-z][a-z0-9_-]*$")
# `{field}`; a backslash-escaped `\{` is literal text, as in the scenarios' step expressions.
_PLACEHOLDER = re.compile(r"(?<!\\)\{([^{}\\]+)\}")
_SVG = re.compile(r"^\s*<svg[\s>].*</svg>\s*$", re.DOTALL)


@dataclass(frozen=True)
class Phrases:
    """Scenario step templates: `{field}` placeholders name input fields."""

    given: str | None = None
    expect: str | None = None


@dataclass(frozen=True)
class Retry:
    """How an idempotent operation is tried again after a retryable failure.

    `attempts` tries in all; the n-th wait is `initial * factor**(n-1)` seconds, at most
    `max_delay`, with up to a quarter of it added at random when `jitter` (so many runs failing
    together do not come back together). A vendor's `Retry-After` (`DriverError(retry_after=)`)
    is honoured when longer. A wait longer than a few seconds is a durable sleep: the run waits
    with its wake time and no thread sleeps.
    """

    attempts: int = 3
    initial: float = 1.0
    factor: float = 2.0
    max_delay: float = 300.0
    jitter: bool = False

    def __post_init__(self) -> None:
        for name in ("attempts", "initial", "factor", "max_delay"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
                raise TypeError(f"Retry({name}=...) must be a number; got {value!r}")
        if not isinstance(self.attempts, int) or not 1 <= self.attempts <= 100:
            raise ValueError(f"Retry(attempts=...) must be a whole number from 1 to 100; got {self.attempts!r}")
        if self.initial < 0 or self.factor < 1 or self.max_delay < 0:
            raise ValueError("Retry needs initial >= 0, factor >= 1 and max_delay >= 0")

    def delay(self, attempt: int, *, retry_after: float | None = None, spread: float = 0.0) -> float:
        """Seconds to wait after failed attempt `attempt` (1-based); `spread` in [0, 1) is the jitter's draw."""
        wait = min(self.max_delay, self.initial * self.factor ** (attempt - 1))
        if self.jitter:
            wait += wait * 0.25 * spread
        if retry_after is not None:
            wait = max(wait, min(float(retry_after), self.max_delay))
        return wait


MAX_TIMEOUT_SECONDS = 24 * 3600.0
IDEMPOTENCY_KEY_KINDS = ("honoured", "ignored")


def check_timeout(value: Any, *, what: str) -> float | None:
    """A call's time limit in seconds (None: the site's default), or a clear error."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_TIMEOUT_SECONDS:
        raise ValueError(f"{what}: timeout must be a number of seconds above 0 and at most a day; got {value!r}")
    return float(value)


InputModel = TypeVar("InputModel", bound=BaseModel)
OutputModel = TypeVar("OutputModel", bound=BaseModel)


@dataclass(frozen=True)
class OperationSpec(Generic[InputModel, OutputModel]):
    """What `op(...)` returns: an operation before it knows its vendor and resource.

    Typed by its input and output models, so a connector declared as a class (`define_connector`)
    gives mypy each operation's call: `ctx.shop.order.get(OrderRef(...))` returns an `Order`."""

    effect: str
    input: type[InputModel]
    output: type[OutputModel]
    idempotent: bool = False
    description: str = ""
    target: Callable[[Any], str] | None = None
    opaque: tuple[str, ...] = ()
    phrases: Phrases = field(default_factory=Phrases)
    timeout: float | None = None
    retry: Retry | None = None
    idempotency_key: str = "honoured"
    reconcile: str | None = None
    summary: str | None = None
    approve_each_target: bool = False
    money: MoneyRule | None = None

    def __call__(self, input: InputModel | Mapping[str, Any] | None = None, /, *, timeout: float | None = None,
                 retry: Retry | None = None) -> OutputModel:
        """The typed shape of a call through ctx; the declaration itself is never called."""
        raise TypeError("an operation is called through ctx, in a workflow: ctx.<vendor>.<resource>.<op>(input); "
                        "op(...) only declares it")


@dataclass(frozen=True)
class Operation:
    """One thing a vendor can do, with the effect a reviewer and the policy see."""

    id: str
    vendor: str
    resource: str
    name: str
    effect: str
    input: type[BaseModel]
    output: type[BaseModel]
    idempotent: bool = False
    description: str = ""
    target: Callable[[Any], str] | None = None
    opaque: tuple[str, ...] = ()
    phrases: Phrases = field(default_factory=Phrases)
    # Seconds a call may take before it is abandoned as `driver_timeout` (None: the site's default).
    timeout: float | None = None
    # How an idempotent call is tried again (None: the site's default, three tries at about 1 s and 2 s).
    retry: Retry | None = None
    # Whether the vendor deduplicates on the idempotency key ("honoured") or not ("ignored"): a call
    # of an "ignored" one that may have taken effect is never sent again blindly (it is in doubt).
    idempotency_key: str = "honoured"
    # The id of the read that answers whether an in-doubt call took effect (same input), if any.
    reconcile: str | None = None
    # What one call does, in a sentence built from its input, for the person asked to approve it:
    # "Refund {amount_cents:money} on order {order_id}" (see `summarize`).
    summary: str | None = None
    # An approval the policy asks for covers calls of the same target only (`cover`).
    approve_each_target: bool = False
    # A money operation's amount field, currency and ceiling (`connectors.money`), when it declares them.
    money: MoneyRule | None = None

    def plain(self) -> dict[str, str]:
        """What a policy sees of the operation: no schemas, no functions."""
        return {
            "id": self.id,
            "vendor": self.vendor,
            "resource": self.resource,
            "name": self.name,
            "effect": self.effect,
        }

    def cover(self, target: str | None) -> str:
        """What an approval of a call of this operation covers: the operation, or, when each target
        is approved on its own, `<op id>@<target>`."""
        return f"{self.id}@{target}" if self.approve_each_target and target else self.id

    def same_contract(self, other: Operation) -> bool:
        return self.effect == other.effect and self.idempotent == other.idempotent

    @property
    def amount(self) -> str | None:
        """The input field holding the money a call moves, when the operation declares it."""
        return self.money.amount if self.money else None

    @property
    def ceiling(self) -> int | None:
        """The most one call may move, in minor units, when the operation declares it."""
        return self.money.ceiling if self.money else None

    def money_of(self, input_json: Any) -> Money | None:
        """The money a call with this input moves, with its currency when known."""
        return self.money.money_of(input_json) if self.money else None

    def ceiling_issues(self, input_json: Any) -> list[dict[str, Any]]:
        """An amount above the declared ceiling, as an issue at the amount's path (or none)."""
        return self.money.ceiling_issues(self.id, input_json) if self.money else []

    def amount_field(self, **field: Any) -> Any:
        """A workflow input field holding this operation's amount, refused above its ceiling
        (`connectors.money.amount_field`): `amount_cents: int = REFUND.amount_field(gt=0)`."""
        return amount_field(self.id, self.money, **field)


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


def op(
    *,
    effect: str,
    input: type[InputModel],
    output: type[OutputModel],
    idempotent: bool = False,
    description: str = "",
    target: Callable[[Any], str] | None = None,
    opaque: tuple[str, ...] | list[str] = (),
    given: str | None = None,
    expect: str | None = None,
    timeout: float | None = None,
    retry: Retry | None = None,
    idempotency_key: str = "honoured",
    reconcile: str | None = None,
    summary: str | None = None,
    approve_each_target: bool = False,
    amount: str | None = None,
    currency: str | None = None,
    ceiling: int | None = None,
) -> OperationSpec[InputModel, OutputModel]:
    """Declare an operation; `define_connector` gives it its vendor and resource.

    `timeout` (seconds) caps each call (default: the site's `SANOMA_CALL_TIMEOUT_SECONDS`, 60);
    `retry` says how an idempotent one is tried again (a non-idempotent one never is).
    `idempotency_key="ignored"` says the vendor does not deduplicate on the key: a call whose
    effect may have happened (the worker died before recording the reply) is then in doubt rather
    than sent again; `reconcile` names a read of the same resource (same input, output
    `{happened: bool, output: ...}`) that settles the doubt by asking the vendor.
    `approve_each_target=True` (with a `target`): an approval the policy asks for lets through only
    calls of the same target, not every later call of the operation in the run (a merge approved for
    one commit does not merge the next).
    A money operation may say which input field holds the money (`amount`, in minor units), its
    `currency` (an ISO 4217 code, or a text input field holding one) and a `ceiling`: a call above it
    is refused `invalid_input` before the policy or the vendor sees it (see `connectors.money`)."""
    if effect not in EFFECTS:
        raise ValueError(f"effect must be one of {', '.join(EFFECTS)}; got {effect!r}")
    for name, schema in (("input", input), ("output", output)):
        if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
            raise TypeError(f"{name} must be a pydantic model class; got {schema!r}")
    if target is not None and not callable(target):
        raise TypeError("target must be a function of the parsed input returning a string")
    if approve_each_target and target is None:
        raise ValueError("approve_each_target needs a target: the approval is for the target a call names")
    timeout = check_timeout(timeout, what="op")
    money = check_money(effect=effect, input=input, amount=amount, currency=currency, ceiling=ceiling)
    if summary is not None:
        check_summary(summary, input)
    if idempotency_key not in IDEMPOTENCY_KEY_KINDS:
        raise ValueError(f"idempotency_key must be one of {', '.join(IDEMPOTENCY_KEY_KINDS)}; got {idempotency_key!r}")
    if reconcile is not None and idempotency_key != "ignored":
        raise ValueError("reconcile is for an operation whose vendor ignores idempotency keys "
                         "(idempotency_key=\"ignored\"): the others are simply sent again")
    if reconcile is not None and (not isinstance(reconcile, str) or not _ID_PART.match(reconcile)):
        raise ValueError(f"reconcile names another operation of the same resource; got {reconcile!r}")
    if retry is not None and not isinstance(retry, Retry):
        raise TypeError(f"retry must be a Retry(...); got {type(retry).__name__}")
    if retry is not None and not idempotent and retry.attempts > 1:
        raise ValueError("retry is for idempotent operations: a non-idempotent call is tried once, since trying "
                         "it again could repeat its effect")
    opaque = tuple(opaque)
    for name in opaque:
        if name not in input.model_fields and name not in output.model_fields:
            raise ValueError(f"opaque field {name!r} is neither an input nor an output field")
    return OperationSpec(
        effect=effect,
        input=input,
        output=output,
        idempotent=bool(idempotent),
        description=description,
        target=target,
        opaque=opaque,
        phrases=Phrases(given=given, expect=expect),
        timeout=timeout,
        retry=retry,
        idempotency_key=idempotency_key,
        reconcile=reconcile,
        summary=summary,
        approve_each_target=bool(approve_each_target),
        money=money,
    )


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
            )
    _check_reconciles(vendor, operations)
    bound = _bind_types(vendor, types, operations)
    return Connector(vendor=vendor, operations=operations, info=_check_info(vendor, info), environment=environment,
                     types=bound)


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


def with_setup(
    connector: Connector,
    *,
    driver: Callable[[], Any] | None = None,
    fake: Callable[[Path | None], Any] | None = None,
    steps: Any = None,
    remote: Callable[[], Any] | None = None,
) -> Connector:
    """Attach a connector's halves to the connector itself, and return it: the makers of its driver
    (`driver()`), its fake (`fake(state_file_or_None)`) and its remote, and its scenario steps.

        with_setup(shop, driver=make_driver, fake=make_fake)

    The halves attach in place, so every module that imported `shop` sees them (`shop =
    with_setup(shop, ...)` is the same thing). Each half attaches once: a second, different one is
    refused, as are the halves themselves given instead of their makers (`driver=define_driver(...)`),
    each with the fix in the message."""
    if not isinstance(connector, Connector):
        raise TypeError(f"with_setup takes the connector first, as define_connector returned it; got "
                        f"{type(connector).__name__}: with_setup(shop, driver=make_driver, fake=make_fake)")
    vendor = connector.vendor
    halves = {"driver": driver, "fake": fake, "remote": remote}
    for kind, maker in halves.items():
        if maker is not None:
            _check_maker(vendor, kind, maker)
    for kind, given in (*halves.items(), ("steps", steps)):
        current = getattr(connector, kind)
        if given is not None and current is not None and current is not given:
            raise ValueError(
                f"connector {vendor} already has a {kind} ({_named(current)}): with_setup attaches halves to the "
                f"connector itself, once each, so call it once with every half; for another connector with "
                f"another {kind} (in a test), copy it first: dataclasses.replace({vendor}, {kind}=...)")
    for kind, given in (*halves.items(), ("steps", steps)):
        if given is not None:
            object.__setattr__(connector, kind, given)  # the connector is frozen for everyone else
    return connector


# How each half is made: what its maker is called with, and how to write one.
_MAKERS = {
    "driver": (0, "def make_driver(): return define_driver({vendor}, {{...}})", "a Driver"),
    "fake": (1, "def make_fake(file=None): return define_fake({vendor}, initial=..., file=file)", "a Fake"),
    "remote": (0, "def make_remote(): return MyRemote(...)", "a Remote"),
}


def _check_maker(vendor: str, kind: str, maker: Any) -> None:
    """A half's maker is a function taking what the runtime calls it with; the half itself, or a
    maker of the wrong shape, is refused naming how to write it."""
    arguments, example, made = _MAKERS[kind]
    example = example.format(vendor=vendor)
    fix = f"write `{example}` and pass {kind}=make_{kind}"
    if type(maker).__name__ in ("Driver", "Fake") or (kind == "remote" and hasattr(maker, "handles")):
        raise TypeError(f"with_setup({vendor}, {kind}=...) takes the function that makes the {kind}, not "
                        f"{made}: the runtime makes it when it needs it ({fix})")
    if not callable(maker):
        raise TypeError(f"with_setup({vendor}, {kind}=...) takes a function; got {type(maker).__name__} ({fix})")
    try:
        signature = inspect.signature(maker)
    except (TypeError, ValueError):
        return  # a builtin or C function: it is called as it is
    try:
        signature.bind(*([None] * arguments))
    except TypeError:
        takes = "the fake's state file (a Path, or None in memory)" if arguments else "no arguments"
        raise TypeError(f"with_setup({vendor}, {kind}=...): {_named(maker)} must take {takes}, as the runtime "
                        f"calls it ({fix})") from None


def _named(value: Any) -> str:
    return getattr(value, "__qualname__", None) or type(value).__name__


# `{field}`, `{field:money}`, or a path into a field holding an object: `{desired.user}`.
_SUMMARY_FIELD = re.compile(r"\{([a-zA-Z_][a-zA-Z0-9_]*(?:\.[a-zA-Z_][a-zA-Z0-9_]*)*)(?::([a-z]+))?\}")
SUMMARY_FORMATS = ("money",)


def check_summary(template: Any, input: type[BaseModel]) -> None:
    """A summary names input fields, each optionally formatted (`{amount_cents:money}`); a path
    (`{desired.user}`) reads into a field holding an object."""
    if not isinstance(template, str) or not template.strip():
        raise ValueError("summary must be a sentence such as 'Refund {amount_cents:money} on order {order_id}'")
    for path, kind in _SUMMARY_FIELD.findall(template):
        name = path.split(".")[0]
        if name not in input.model_fields:
            raise ValueError(f"summary {template!r} names {{{path}}}, which is not an input field; "
                             f"its fields are {', '.join(input.model_fields)}")
        if kind and kind not in SUMMARY_FORMATS:
            raise ValueError(f"summary {template!r}: {{{path}:{kind}}} is not a format; the formats are "
                             f"{', '.join(SUMMARY_FORMATS)}")


def _at(value: Any, path: str) -> Any:
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def summarize(operation: Operation, input_json: Any) -> str:
    """The operation's summary for one call's input ("" without a summary). Money is cents shown
    as units with two decimals and thousands separated (123456 -> 1,234.56), with the currency
    when it is the operation's declared amount and its currency is known (1,234.56 EUR)."""
    if not operation.summary or not isinstance(input_json, dict):
        return ""

    def field(match: re.Match[str]) -> str:
        path = match.group(1)
        value = _at(input_json, path)
        if match.group(2) == "money" and isinstance(value, int) and not isinstance(value, bool):
            money = operation.money_of(input_json) if path == operation.amount else None
            return format_money(value, money.currency if money else None)
        return "?" if value is None else str(value)

    return _SUMMARY_FIELD.sub(field, operation.summary)


def phrase_fields(template: str) -> list[str]:
    return _PLACEHOLDER.findall(template)
