"""Function policies: `define_policy(fn, version=...)` and the decision helpers."""
from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from connectors.errors import InvalidInput, SanomaError

from .decisions import ALLOW, APPROVE, DENY, KINDS, Decision, PolicyCall, normalise_approver

SUGGESTION = "return allow(), deny(reason) or approve(approver)"


def _reasons(reasons: Any) -> tuple[str, ...]:
    if reasons is None:
        return ()
    if isinstance(reasons, str):
        return (reasons,)
    return tuple(str(r) for r in reasons)


def allow(reasons: Iterable[str] | str = ()) -> Decision:
    """Let the call through."""
    return Decision(kind=ALLOW, reasons=_reasons(reasons))


def deny(reason: str, reasons: Iterable[str] | str = ()) -> Decision:
    """Refuse the call: the run fails `policy_denied` with `reason`."""
    return Decision(kind=DENY, reason=reason, reasons=_reasons(reasons))


def _cover_id(item: Any) -> str:
    if isinstance(item, str) and item.strip():
        return item.strip()
    if isinstance(item, Mapping) and isinstance(item.get("id"), str) and item["id"]:
        return item["id"]
    op_id = getattr(item, "id", None)
    if isinstance(op_id, str) and op_id:
        return op_id
    raise InvalidInput(f"approve(): covers must be operations or operation ids; got {item!r}")


def approve(approver: Any, title: Any = None, covers: Iterable[Any] = (), *, self_approval: bool = False) -> Decision:
    """Hold the call until `approver` (a person id, or `{"group": name}`) approves.

    `title` is a string or `{"title"?, "covers"?}`; `covers` are further operations
    (or their ids) the same approval lets through later in the run. The run's starter may never
    decide its approvals unless `self_approval=True` allows it for this one.
    """
    if isinstance(title, Mapping):
        options = title
        title = options.get("title")
        covers = options.get("covers") or covers
    if isinstance(covers, (str, Mapping)) or not isinstance(covers, Iterable):
        covers = (covers,) if covers else ()
    ids: list[str] = []
    for item in covers:
        op_id = _cover_id(item)
        if op_id not in ids:
            ids.append(op_id)
    return Decision(
        kind=APPROVE,
        approver=normalise_approver(approver),  # None when it names nobody: refused by validation
        title=title if isinstance(title, str) and title.strip() else None,
        covers=tuple(ids),
        self_approval=self_approval,
    )


def validate_decision(op_id: str, answer: Any) -> Decision:
    """The policy's answer if it is a usable decision, else `invalid_input` naming the op."""

    def refuse(what: str) -> InvalidInput:
        return InvalidInput(
            f"The policy's answer for {op_id} is not a decision ({what}); {SUGGESTION}",
            data={"op": op_id},
        )

    if not isinstance(answer, Decision):
        raise refuse(f"got {type(answer).__name__}")
    if answer.kind not in KINDS:
        raise refuse(f"unknown kind {answer.kind!r}")
    if not all(isinstance(r, str) for r in answer.reasons):
        raise refuse("reasons must be strings")
    if answer.kind == DENY and not (isinstance(answer.reason, str) and answer.reason.strip()):
        raise refuse("deny needs a reason")
    if answer.kind == APPROVE:
        if normalise_approver(answer.approver) is None:
            raise refuse('approve needs an approver: a person id or {"group": name}')
        if not all(isinstance(c, str) and c for c in answer.covers):
            raise refuse("covers must be operation ids")
    if not isinstance(answer.self_approval, bool):
        raise refuse("self_approval must be True or False")
    if answer.self_approval and answer.kind != APPROVE:
        raise refuse("self_approval only applies to approve")
    return answer


def _failed(op_id: str, err: BaseException) -> SanomaError:
    message = str(err) or type(err).__name__
    code = getattr(err, "code", None)
    out = SanomaError(
        f"The policy failed deciding {op_id}: {message}",
        code=code if isinstance(code, str) else None,
        data={"op": op_id},
    )
    out.__cause__ = err
    return out


def _settle(awaitable: Any) -> Any:
    """The result of an async policy. A policy may be `async def` but must not really wait (no
    clock or network), so it is driven to its end here without an event loop."""
    coro = awaitable if inspect.iscoroutine(awaitable) else awaitable.__await__()
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("it waited on something; a policy must decide without waiting")


class FunctionPolicy:
    """A policy written as a Python function of a `PolicyCall`."""

    defined = True
    kind = "python"

    def __init__(self, fn: Callable[[PolicyCall], Any], version: str) -> None:
        self.fn = fn
        self.version = version
        self.name = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', repr(fn))}".lstrip(".")

    def decide(self, call: PolicyCall) -> Decision:
        op_id = call.op_id
        try:
            answer = self.fn(call)
            if inspect.isawaitable(answer):
                answer = _settle(answer)
        except Exception as err:  # the policy's own failure fails the run, keeping its code
            raise _failed(op_id, err) from err
        decision = validate_decision(op_id, answer)
        return dataclasses.replace(decision, policy_version=self.version, policies=(self.name,))

    def describe(self) -> dict[str, Any]:
        return {"defined": True, "kind": self.kind, "version": self.version, "name": self.name}

    def __repr__(self) -> str:
        return f"<FunctionPolicy {self.name} version={self.version!r}>"


def define_policy(fn: Callable[[PolicyCall], Any], *, version: str) -> FunctionPolicy:
    """A policy from a function; `version` (a non-empty string) is stamped on every decision."""
    if not isinstance(version, str) or not version.strip():
        raise ValueError("define_policy: version must be a non-empty string")
    if not callable(fn):
        raise TypeError("define_policy: the policy must be a function of the call")
    return FunctionPolicy(fn, version)


class _AllowAll:
    """The policy used when none is configured: always allows; described as not defined."""

    defined = False
    kind = "allow_all"
    version = "allow_all"

    def decide(self, call: PolicyCall) -> Decision:
        return Decision(kind=ALLOW, policy_version=self.version)

    def describe(self) -> dict[str, Any]:
        return {"defined": False, "kind": self.kind, "version": self.version}

    def __repr__(self) -> str:
        return "allow_all"


allow_all = _AllowAll()
