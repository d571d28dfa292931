"""An operation: what one call to a vendor does (its effect, input and output models, retries,
timeout, idempotency, phrases), declared with `op(...)`."""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from connectors.limits import Limit, check_limit
from connectors.money import Money, MoneyRule, amount_field, check_money
from connectors.operations.summaries import check_summary

_ID_PART = re.compile(r"^[a-z][a-z0-9_-]*$")
EFFECTS = ("read", "write", "publish", "send", "money", "access")

Effect = Literal["read", "write", "publish", "send", "money", "access"]


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
    limit: Limit | None = None

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
    # Its own rate and concurrency limit (`connectors.limits`), and its connector's, when declared.
    limit: Limit | None = None
    vendor_limit: Limit | None = None

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
    limit: Limit | None = None,
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
    is refused `invalid_input` before the policy or the vendor sees it (see `connectors.money`).
    `limit=Limit(rate="5/s", concurrency=2, key="account")` bounds this operation's calls across
    every worker, besides its connector's limit (see `connectors.limits`)."""
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
    limit = check_limit(limit, where="op", inputs=[input])
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
        limit=limit,
    )
