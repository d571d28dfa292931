"""Drivers: the functions that carry an operation to its vendor."""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar

from pydantic import BaseModel

from connectors.errors import DriverError  # noqa: F401  (re-exported for driver authors)
from connectors.operations import Connector


@dataclass(frozen=True)
class CallContext:
    """What a driver is told about the call besides its input.

    `idempotency_key` is the same on every retry and replay of one call (`<run>:<seq>`): a driver
    passes it to the vendor so a repeated call takes effect once. `timeout` is the seconds this
    attempt may take and `deadline` the moment (epoch seconds) it is abandoned at: a driver passes
    the time left to its HTTP client (`context.time_left()`), so a hung vendor fails the attempt
    rather than the engine giving up on a call still running.
    """

    idempotency_key: str
    run_id: str
    op_id: str
    attempt: int = 1
    by: str | None = None
    secrets: Mapping[str, str] = field(default_factory=dict)
    timeout: float | None = None
    deadline: float | None = None

    def time_left(self, *, at_least: float = 0.1) -> float | None:
        """Seconds until the deadline (at least `at_least`), or None without one."""
        if self.deadline is None:
            return None
        return max(at_least, self.deadline - time.time())


# The parsed input of one operation: each driver function takes its own operation's input model.
InputT = TypeVar("InputT", bound=BaseModel)
# `fn(parsed_input, call_context) -> reply`. Generic in the input, so a function declared with its
# own model (`def refund(i: RefundRequest, c: CallContext)`) type-checks where a driver expects one;
# a mapping of several operations' functions holds `DriverFn[Any]`.
DriverFn: TypeAlias = Callable[[InputT, CallContext], Any]


@dataclass(frozen=True, eq=False)
class Driver:
    """The functions of one vendor's operations. `inline`, when given, says of an operation whether
    its call answers at once on the caller's thread (an in-memory fake with nothing held): the
    engine then calls it there, with no pool thread watching its deadline."""

    vendor: str
    functions: Mapping[str, DriverFn[Any]]
    env: Mapping[str, str] = field(default_factory=dict)
    inline: Callable[[str], bool] | None = None

    def call(self, op_id: str, payload: BaseModel, context: CallContext) -> Any:
        return self.functions[op_id](payload, context)

    def answers_inline(self, op_id: str) -> bool:
        """The call of `op_id` answers at once on the caller's thread (see `inline`)."""
        return self.inline is not None and self.inline(op_id)


def flatten_impl(vendor: str, impl: Mapping[str, Any]) -> dict[str, Callable[..., Any]]:
    """`{resource: {name: fn}}` as `{<vendor>.<resource>.<name>: fn}`."""
    flat: dict[str, Callable[..., Any]] = {}
    for resource, group in impl.items():
        if not isinstance(group, Mapping):
            raise TypeError(f"{vendor}: {resource} must map operation names to functions")
        for name, fn in group.items():
            if not callable(fn):
                raise TypeError(f"{vendor}.{resource}.{name} must be a function")
            flat[f"{vendor}.{resource}.{name}"] = fn
    return flat


def check_complete(what: str, connector: Connector, implemented: set[str]) -> None:
    declared = set(connector.operations)
    missing = sorted(declared - implemented)
    extra = sorted(implemented - declared)
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {', '.join(missing)}")
        if extra:
            parts.append(f"not declared by the connector: {', '.join(extra)}")
        raise ValueError(f"{what} for {connector.vendor} must implement every declared operation and nothing else: "
                         f"{'; '.join(parts)}")


def define_driver(
    connector: Connector,
    impl: Mapping[str, Mapping[str, DriverFn[Any]]],
    *,
    env: Mapping[str, str] | None = None,
) -> Driver:
    """A driver implementing every operation of `connector` and nothing else.

    `env` names the environment variables the driver reads at call time, with a one-line
    description each; credentials never come from the config.
    """
    functions = flatten_impl(connector.vendor, impl)
    check_complete("A driver", connector, set(functions))
    return Driver(vendor=connector.vendor, functions=functions, env=dict(env or {}))
