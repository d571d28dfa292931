"""`define_workflow`: a business process as a Python function run durably.

Plain Python: a workflow file imports this without Django models loaded.
"""
from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from pydantic import BaseModel

from connectors.operations import Operation

BUILTIN_USES = ("approval", "sleep", "all")
BUILTIN_WORKFLOWS = ("drift", "apply", "call", "change")
_NAME = re.compile(r"^[a-z][a-z0-9-]*$")


class NoInput(BaseModel):
    """The input of a workflow that takes none: `{}`."""

    model_config = {"extra": "forbid"}


@dataclass(frozen=True)
class Approved:
    """What `ctx.approval` returns once approved."""

    approved_by: str
    at: Any
    note: str = ""
    approval_id: str = ""


@dataclass(frozen=True)
class Schedule:
    cron: str
    timezone: str = "UTC"


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f'Workflow name "{name}" must be lowercase letters, digits and dashes')
    return name


def check_schedule(schedule: Any, timezone: Any = None) -> Schedule:
    if not isinstance(schedule, str) or not croniter.is_valid(schedule):
        raise ValueError(f"schedule {schedule!r} is not a cron expression (five fields, e.g. '0 9 * * 1-5')")
    tz = timezone or "UTC"
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise ValueError(f"timezone {tz!r} is not an IANA time zone (e.g. 'Europe/Helsinki')") from None
    return Schedule(cron=schedule, timezone=tz)


def app_of(file: str | None) -> str | None:
    """`apps/<app>/workflows/x.py` belongs to app `<app>`; anything else to none."""
    if not file:
        return None
    parts = Path(file).resolve().parts
    for i in range(len(parts) - 3, -1, -1):
        if parts[i] == "apps" and parts[i + 2] == "workflows":
            return parts[i + 1]
    return None


@dataclass(frozen=True, eq=False)
class WorkflowDefinition:
    name: str
    run: Callable[..., Any]
    input: type[BaseModel]
    ops: tuple[str, ...]
    operations: Mapping[str, Operation]
    builtins: tuple[str, ...]
    title: str = ""
    trigger: str | Schedule = "manual"
    file: str | None = None
    app: str | None = None
    local_name: str = ""
    builtin: bool = False

    def __repr__(self) -> str:
        return f"<workflow {self.name}>"


def define_workflow(
    *,
    name: str,
    run: Callable[..., Any],
    input: type[BaseModel] | None = None,
    uses: Sequence[Operation | str] = (),
    title: str = "",
    trigger: str | Mapping[str, str] = "manual",
) -> WorkflowDefinition:
    """A workflow: `run(ctx, input)` may call exactly what `uses` lists, through `ctx`.

    `uses` holds operations (from a connector) or their ids, and the built-ins "approval",
    "sleep" and "all". A file under `apps/<app>/workflows/` names it `<app>.<name>`.
    """
    local = check_name(name)
    if not callable(run):
        raise TypeError(f'Workflow "{name}": run must be a function run(ctx, input)')
    schema = input if input is not None else NoInput
    if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
        raise TypeError(f'Workflow "{name}": input must be a pydantic model class')
    ops: list[str] = []
    operations: dict[str, Operation] = {}
    builtins: list[str] = []
    for use in uses:
        if isinstance(use, Operation):
            ops.append(use.id)
            operations[use.id] = use
        elif isinstance(use, str) and use in BUILTIN_USES:
            builtins.append(use)
        elif isinstance(use, str) and use.count(".") >= 2:
            ops.append(use)
        else:
            raise ValueError(
                f'Workflow "{name}": uses lists {use!r}, '
                f'which is neither an operation nor one of {", ".join(BUILTIN_USES)}'
            )
    if trigger == "manual":
        checked_trigger: str | Schedule = "manual"
    elif isinstance(trigger, Mapping) and "schedule" in trigger and set(trigger) <= {"schedule", "timezone"}:
        try:
            checked_trigger = check_schedule(trigger["schedule"], trigger.get("timezone"))
        except ValueError as err:
            raise ValueError(f'Workflow "{name}": {err}') from None
    else:
        raise ValueError(f'Workflow "{name}": trigger must be "manual" or {{"schedule": ..., "timezone": ...}}')
    file = sys._getframe(1).f_code.co_filename
    app = app_of(file)
    return WorkflowDefinition(
        name=f"{app}.{local}" if app else local,
        run=run,
        input=schema,
        ops=tuple(dict.fromkeys(ops)),
        operations=operations,
        builtins=tuple(dict.fromkeys(builtins)),
        title=title,
        trigger=checked_trigger,
        file=file,
        app=app,
        local_name=local,
    )
