"""`define_workflow`: a business process as a Python function run durably.

Plain Python: a workflow file imports this without Django models loaded.
"""
from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError
from pydantic import BaseModel

from connectors.operations import Operation

BUILTIN_USES = ("approval", "sleep", "all", "wait_message", "start_run", "wait_run")
BUILTIN_WORKFLOWS = ("drift", "apply", "call", "change")
_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_TRIGGER_KEYS = {"schedule", "every", "timezone", "overlap", "catchup"}


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


CRON_FIELDS = ("minute", "hour", "day-of-month", "month", "day-of-week")
OVERLAPS = ("allow", "skip")
DEFAULT_CATCHUP_SECONDS = 24 * 3600.0
_EVERY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


@dataclass(frozen=True)
class Schedule:
    """A schedule trigger: a five-field `cron` in `timezone`, or an interval of `every` seconds
    (fires on the multiples of the interval since the Unix epoch)."""

    cron: str | None = None
    timezone: str = "UTC"
    every: float | None = None
    overlap: str = "allow"
    catchup: float = DEFAULT_CATCHUP_SECONDS


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f'Workflow name "{name}" must be lowercase letters, digits and dashes')
    return name


def check_cron(expression: Any) -> str:
    """A five-field cron expression; anything else is refused naming the field that is wrong."""
    if not isinstance(expression, str) or not expression.strip():
        raise ValueError(f"schedule {expression!r} is not a cron expression (five fields, e.g. '0 9 * * 1-5')")
    fields = expression.split()
    if len(fields) != 5:
        raise ValueError(
            f"schedule {expression!r} is not a cron expression: it has {len(fields)} field(s), a cron "
            f"expression has five: "
            f"{' '.join(CRON_FIELDS)} (e.g. '0 9 * * 1-5')")
    try:
        CronSim(expression, datetime(2000, 1, 1, tzinfo=UTC))
    except CronSimError as err:
        message = str(err)
        named = next((f for f in CRON_FIELDS if f in message), None)
        where = f"its {named} field ({fields[CRON_FIELDS.index(named)]!r}) is invalid" if named else message
        raise ValueError(f"schedule {expression!r} is not a cron expression: {where}") from None
    return " ".join(fields)


def parse_every(every: Any) -> float:
    """`"15m"`, `"30s"`, `"2h"`, `"1d"` (or a number of seconds): at least one second."""
    if isinstance(every, bool):
        seconds = None
    elif isinstance(every, (int, float)):
        seconds = float(every)
    elif isinstance(every, str) and (match := _EVERY.match(every)):
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    else:
        seconds = None
    if seconds is None:
        raise ValueError(f"every {every!r} is not an interval (a number and a unit: '30s', '15m', '2h', '1d')")
    if seconds < 1:
        raise ValueError(f"every {every!r} is shorter than the shortest interval, 1 s")
    return seconds


def check_schedule(schedule: Any = None, timezone: Any = None, *, every: Any = None, overlap: Any = None,
                   catchup: Any = None) -> Schedule:
    tz = timezone or "UTC"
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError, TypeError):
        raise ValueError(f"timezone {tz!r} is not an IANA time zone (e.g. 'Europe/Helsinki')") from None
    if (schedule is None) == (every is None):
        raise ValueError("a schedule trigger has either schedule (a cron expression) or every (an interval)")
    cron = check_cron(schedule) if schedule is not None else None
    interval = parse_every(every) if every is not None else None
    overlap = overlap or "allow"
    if overlap not in OVERLAPS:
        raise ValueError(f"overlap {overlap!r} is not one of {', '.join(OVERLAPS)}")
    window = DEFAULT_CATCHUP_SECONDS if catchup is None else catchup
    if isinstance(window, str):
        window = 0.0 if window.strip() in ("0", "0s") else parse_every(window)
    if isinstance(window, bool) or not isinstance(window, (int, float)) or window < 0:
        raise ValueError(f"catchup {catchup!r} is not a window ('24h', '30m', 0 for none)")
    return Schedule(cron=cron, timezone=tz, every=interval, overlap=overlap, catchup=float(window))


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
    trigger: str | Mapping[str, Any] = "manual",
) -> WorkflowDefinition:
    """A workflow: `run(ctx, input)` may call exactly what `uses` lists, through `ctx`.

    `uses` holds operations (from a connector) or their ids, and the built-ins "approval",
    "sleep", "all", "wait_message", "start_run" and "wait_run". A file under
    `apps/<app>/workflows/` names it `<app>.<name>`.
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
    elif isinstance(trigger, Mapping) and ({"schedule", "every"} & set(trigger)):
        unknown = set(trigger) - _TRIGGER_KEYS
        try:
            if unknown:
                raise ValueError(f"trigger has {', '.join(sorted(unknown))}; a schedule trigger has "
                                 f"{', '.join(sorted(_TRIGGER_KEYS))}")
            checked_trigger = check_schedule(trigger.get("schedule"), trigger.get("timezone"),
                                             every=trigger.get("every"), overlap=trigger.get("overlap"),
                                             catchup=trigger.get("catchup"))
        except ValueError as err:
            raise ValueError(f'Workflow "{name}": {err}') from None
    else:
        raise ValueError(f'Workflow "{name}": trigger must be "manual", {{"schedule": cron, "timezone": tz}} '
                         f'or {{"every": "15m"}}')
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
