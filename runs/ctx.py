"""`Ctx`: the typed face of the `ctx` a workflow's `run(ctx, input)` is given, for mypy and an editor.

    from runs.authoring import Ctx, define_workflow

    def run(ctx: Ctx, input: RefundInput) -> dict[str, str]:
        order = ctx.shop.order.get(OrderRef(order_id=input.order_id))   # an Order at run time
        ok = ctx.approval("Refund a big order", approver="group:finance")  # an Approved
        shipped = ctx.wait_message("shipped", model=Shipped)              # a Shipped
        ...

What mypy checks with `ctx: Ctx`:

- the built-ins, fully: `sleep`, `approval`, `wait_message`, `start_run`, `wait_run`, `all`, `now`,
  `tag`, `run_id` (a misspelt keyword, a wrong type, a missing approver are errors; `ctx.sleeep(...)`
  is an error too: an unknown name is a vendor, and a vendor is not callable);
- a vendor's calls, as far as Python allows: `ctx.<vendor>.<resource>.<op>(input, timeout=, retry=)`
  takes one input (its model or a dict) and only those keywords, and `ctx.shop.order(...)` is an
  error. What it returns is `Any` to mypy, since `Ctx` cannot know a company's vendors: at run time
  it is the operation's output model, so `order: Order = ctx.shop.order.get(...)` gives the editor
  the type. A connector declared as a class (`define_connector("shop", Shop)`) can be named on a
  `Ctx` of the company's own, and then mypy checks each operation's input and output too:

        class ShopCtx(Ctx, Protocol):
            shop: Shop

- `wait_message(topic, model=M)` and `wait_run(run_id, model=M)` return an `M` (the payload or the
  child's output parsed by the model; a payload the model refuses fails the run with
  `invalid_input`); without `model` they return the JSON as sent.

Nothing here runs: the engine's `RunContext` (`runs.engine.context`) is what a workflow gets.
Plain Python, no Django.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, NoReturn, Protocol, TypeVar, overload

from pydantic import BaseModel

from connectors.operations import Operation, Retry
from runs.config.workflows import Approved, WorkflowDefinition

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")
# What an operation takes: its input model, another model with the same fields, or a dict.
Input = BaseModel | Mapping[str, Any]
Seconds = float | timedelta


class Call(Protocol):
    """One operation reached through ctx: `ctx.shop.order.get(OrderRef(order_id="1"))`."""

    def __call__(self, input: Input | None = None, /, *, timeout: float | None = None,
                 retry: Retry | None = None) -> Any: ...


class Resource(Protocol):
    """`ctx.<vendor>.<resource>`: its operations by name."""

    def __getattr__(self, name: str) -> Call: ...


class Vendor(Protocol):
    """`ctx.<vendor>`: its resources by name (a connector's vendor, e.g. `ctx.shop`)."""

    def __getattr__(self, name: str) -> Resource: ...


class Collection(Protocol):
    """`ctx.data.<name>`: the four operations of one of the company's collections."""

    def get(self, input: Input, /, *, timeout: float | None = None, retry: Retry | None = None) -> Any: ...

    def list(self, input: Input | None = None, /, *, timeout: float | None = None,
             retry: Retry | None = None) -> Any: ...

    def put(self, input: Input, /, *, timeout: float | None = None, retry: Retry | None = None) -> Any: ...

    def delete(self, input: Input, /, *, timeout: float | None = None, retry: Retry | None = None) -> Any: ...

    def __getattr__(self, name: str) -> Collection: ...  # an app's collections: ctx.data.<app>.<name>


class Collections(Protocol):
    """`ctx.data`: the company's collections by name."""

    def __getattr__(self, name: str) -> Collection: ...


class Ctx(Protocol):
    """What a workflow's `run(ctx, input)` may call: annotate `ctx: Ctx` (see the module's docstring)."""

    @property
    def run_id(self) -> str:
        """The run's id."""
        ...

    @property
    def data(self) -> Collections:
        """The company's collections: `ctx.data.notes.put({"record": {...}})`."""
        ...

    def now(self) -> datetime:
        """The current time, recorded: a replay sees the same value."""
        ...

    def tag(self, **keys: str | int) -> None:
        """Business keys to find the run by: `ctx.tag(order="1001")`."""
        ...

    def patched(self, name: str) -> bool:
        """True for a run that reaches this point on code with the patch `name` (recorded), False for
        a run recorded before it: `if ctx.patched("name"): new path, else: old path`."""
        ...

    def continue_as_new(self, input: Mapping[str, Any] | BaseModel | None = None) -> NoReturn:
        """Start this run afresh with `input`: the body runs again from the top, in the same run
        (same id, ledger and page); the steps so far are kept but never replayed again."""
        ...

    def sleep(self, until: datetime | str | int | None = None, *, ms: float = 0, seconds: float = 0,
              minutes: float = 0, hours: float = 0, days: float = 0) -> None:
        """Wait until a moment (an aware datetime, ISO 8601 with an offset, or epoch ms) or for a
        duration (the units summed), holding no process."""
        ...

    def approval(self, title: str, *, approver: str | Mapping[str, str],
                 covers: Sequence[str | Operation] = (), links: Sequence[str] = (),
                 details: Mapping[str, Any] | None = None) -> Approved:
        """Ask a person (`"alice"`) or a group (`"group:finance"`) to approve; waits for the decision.
        Rejected: `approval_rejected`; withdrawn: `approval_withdrawn`."""
        ...

    @overload
    def wait_message(self, topic: str, *, timeout: Seconds | None = None) -> dict[str, Any]: ...

    @overload
    def wait_message(self, topic: str, *, model: type[M], timeout: Seconds | None = None) -> M: ...

    def wait_message(self, topic: str, *, model: type[BaseModel] | None = None,
                     timeout: Seconds | None = None) -> Any:
        """The next message on `topic`: its payload, or with `model` the payload as that model.
        Past `timeout` (seconds or a timedelta): `wait_timed_out`."""
        ...

    def start_run(self, workflow: str | WorkflowDefinition, input: Input | None = None,
                  run_id: str | None = None) -> str:
        """Start a child run of `workflow` (its name or its definition); returns its id."""
        ...

    @overload
    def wait_run(self, run_id: str, *, timeout: Seconds | None = None) -> Any: ...

    @overload
    def wait_run(self, run_id: str, *, model: type[M], timeout: Seconds | None = None) -> M: ...

    def wait_run(self, run_id: str, *, model: type[BaseModel] | None = None,
                 timeout: Seconds | None = None) -> Any:
        """Wait for a child run to end: its output, or with `model` its output as that model. A
        failed child raises its error; past `timeout`: `wait_timed_out`."""
        ...

    def all(self, members: Sequence[Callable[..., T]]) -> list[T]:
        """Run zero-argument functions one after another as one fan-out; their results in order.
        (Typed `Callable[..., T]`: mypy cannot infer `lambda p=p: ...`, the comprehension's idiom,
        against a function of no arguments.)"""
        ...

    def __getattr__(self, vendor: str) -> Vendor:
        """`ctx.<vendor>`: a connector's operations, `ctx.shop.order.get(...)`."""
        ...


__all__ = ["Call", "Collection", "Collections", "Ctx", "Resource", "Vendor"]
