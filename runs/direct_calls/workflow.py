"""The built-in `call` workflow: one operation called outside any workflow of the company's, as a run.

A direct call (`manage.py call`, `POST /api/calls`, `runs.direct_calls.call`) is a run of this
workflow, so it goes through what every call goes through: the pauses, the policy, an approval when
the policy holds it, the driver with its retries and in-doubt handling, and the ledger. Its input is
`{"op": "<vendor>.<resource>.<name>", "input": {...}}`; its output is the operation's reply.

Which operations may be called directly: every operation of the config's connectors and
collections; the runtime's own (`sanoma.*`) are called only by the built-in workflows that own
them. A config with none has no `call` workflow.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, Field

from connectors.drivers import Driver
from connectors.operations import Operation
from runs.config import extensions
from runs.config.extensions import Extension, Request
from runs.config.workflows import WorkflowDefinition, define_workflow

CALL_WORKFLOW = "call"
RUNTIME_VENDOR = "sanoma"


class CallInput(BaseModel):
    """What a run of `call` is started with: the operation, and its input as sent."""

    op: str = Field(min_length=1, description="the operation's id, <vendor>.<resource>.<name>")
    input: dict[str, Any] = Field(default_factory=dict, description="the operation's input")


def directly_callable(ops: Mapping[str, Operation]) -> dict[str, Operation]:
    """The operations a direct call may name, by id."""
    return {op_id: op for op_id, op in sorted(ops.items()) if op.vendor != RUNTIME_VENDOR}


def call_body(ctx: Any, input: CallInput) -> Any:
    """Call the operation through ctx (`import` is a keyword, so the path is walked by name)."""
    target = ctx
    for part in input.op.split("."):
        target = getattr(target, part)
    reply = target(input.input)
    return reply.model_dump(mode="json") if isinstance(reply, BaseModel) else reply


def call_workflow(ops: Mapping[str, Operation]) -> WorkflowDefinition | None:
    """`call`, using every operation that may be called directly; None when there is none."""
    callable_ops = directly_callable(ops)
    if not callable_ops:
        return None
    definition = define_workflow(name=CALL_WORKFLOW, run=call_body, input=CallInput, uses=list(callable_ops.values()),
                                 title="Call one operation directly, outside any workflow")
    return replace(definition, builtin=True, file=__file__)


def _workflows(ops: Mapping[str, Operation], drivers: Mapping[str, Driver]) -> list[WorkflowDefinition]:
    found = call_workflow(ops)
    return [] if found is None else [found]


def provide(request: Request) -> Extension:
    """The extension's config provider: the `call` workflow, over the config's resolved operations."""
    return Extension(workflows=_workflows)


def install() -> None:
    """Add `call` to every config resolved from now on (the runs app does it when it is ready)."""
    extensions.register("calls", provide)


__all__ = ["CALL_WORKFLOW", "CallInput", "call_body", "call_workflow", "directly_callable", "install", "provide"]
