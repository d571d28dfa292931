"""`define_workflow`: a business process as a Python function run durably.

Plain Python: a workflow file imports this without Django models loaded.
"""
from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError
from pydantic import BaseModel

from connectors.operations import Operation

BUILTIN_USES = ("approval", "sleep", "all", "wait_message", "start_run", "wait_run")
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


CRON_FIELDS = ("minute", "hour", "day-of-month", "month", "day-of-week")
OVERLAPS = ("allow", "skip")
DEFAULT_CATCHUP_SECONDS = 24 * 3600.0
_EVERY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


@dataclass(frozen=True, init=False)
class Schedule:
    """A workflow that runs on a clock: `Schedule(cron="0 9 * * 1-5", timezone="Europe/Helsinki")`.

    `cron` is five fields (minute hour day-of-month month day-of-week) read in `timezone` (an IANA
    name, UTC by default). `overlap="skip"` starts no run while the last fire's run is unfinished;
    `catchup` is how far back missed fires are run when the worker comes back (`"2h"`, seconds, or
    0 for none; 24 h by default). An interval is `Every("15m")`, which is a `Schedule` whose `every`
    is its seconds. Every mistake is a `ValueError` naming the field, when the value is made."""

    cron: str | None
    timezone: str
    overlap: str
    catchup: float
    every: float | None

    def __init__(self, cron: str | None = None, *, timezone: str = "UTC", overlap: str = "allow",
                 catchup: float | str = DEFAULT_CATCHUP_SECONDS, every: float | str | None = None) -> None:
        tz = timezone or "UTC"
        try:
            ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError, TypeError):
            raise ValueError(f"timezone {tz!r} is not an IANA time zone (e.g. 'Europe/Helsinki')") from None
        if (cron is None) == (every is None):
            raise ValueError("a Schedule has a cron expression (Schedule(cron='0 9 * * 1-5')) or, as Every('15m'), "
                             "an interval; not both, not neither")
        overlap = overlap or "allow"
        if overlap not in OVERLAPS:
            raise ValueError(f"overlap {overlap!r} is not one of {', '.join(OVERLAPS)}")
        window: Any = DEFAULT_CATCHUP_SECONDS if catchup is None else catchup
        if isinstance(window, str):
            window = 0.0 if window.strip() in ("0", "0s") else parse_every(window)
        if isinstance(window, bool) or not isinstance(window, (int, float)) or window < 0:
            raise ValueError(f"catchup {catchup!r} is not a window ('24h', '30m', 0 for none)")
        set_ = object.__setattr__  # checked and normalised once, here: the value is frozen
        set_(self, "cron", check_cron(cron) if cron is not None else None)
        set_(self, "timezone", tz)
        set_(self, "overlap", overlap)
        set_(self, "catchup", float(window))
        set_(self, "every", parse_every(every) if every is not None else None)


def Every(interval: str | float, *, overlap: str = "allow", catchup: float | str = DEFAULT_CATCHUP_SECONDS,
          timezone: str = "UTC") -> Schedule:
    """A workflow that runs at an interval: `Every("15m")` (`"30s"`, `"2h"`, `"1d"`, or seconds; at
    least one second). It fires on the multiples of the interval since 1970-01-01 UTC, so every
    worker agrees on the fire times. `overlap` and `catchup` as for `Schedule`."""
    return Schedule(every=interval, overlap=overlap, catchup=catchup, timezone=timezone)


Trigger = Literal["manual"] | Schedule


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
    """A schedule from its parts (a cron expression or an interval), checked: see `Schedule`."""
    return Schedule(cron=schedule, timezone=timezone or "UTC", every=every, overlap=overlap or "allow",
                    catchup=DEFAULT_CATCHUP_SECONDS if catchup is None else catchup)


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
    # `uses` was left out: `ops` and `builtins` are derived from the outline when the config resolves.
    derived: bool = False
    # How long one of its approvals may stay pending before it is overdue (the health page, the
    # sanoma_approvals_over_sla gauge); None: no limit.
    approval_sla: timedelta | None = None
    # How long its ended runs are kept before `manage.py retention` exports and removes them (None: the
    # site's SANOMA_KEEP_ENDED_RUNS_DAYS, which by default keeps them forever).
    keep: timedelta | None = None

    def __repr__(self) -> str:
        return f"<workflow {self.name}>"


def define_workflow(
    *,
    name: str,
    run: Callable[..., Any],
    input: type[BaseModel] | None = None,
    uses: Sequence[Operation | str | Callable[..., Any]] | None = None,
    title: str = "",
    trigger: Trigger = "manual",
    approval_sla: timedelta | str | None = None,
    keep: timedelta | None = None,
) -> WorkflowDefinition:
    """A workflow: `run(ctx, input)`, run durably; every call it makes goes through `ctx`.

    `uses` is best left out: it is then derived from the workflow's outline, every ctx call `run`
    makes (operations, collections and built-ins). Given, it is a limit, and the config refuses a
    call the list lacks, naming the file and line: operations (`shop.op("shop.order.get")`, a
    collection's `notes.put`, or an id) and built-ins as `Ctx.approval`, `Ctx.sleep`, `Ctx.all`,
    `Ctx.wait_message`, `Ctx.start_run`, `Ctx.wait_run`. `trigger` is "manual", a
    `Schedule(cron=..., timezone=...)` or an `Every("15m")`. A file under `apps/<app>/workflows/`
    names it `<app>.<name>`. `approval_sla` (a `timedelta`, or `"4h"`, `"2d"`) is how long one of
    its approvals may wait for a decision before the desk's health page and the alerts call it
    overdue. `keep` (a timedelta) is how long its ended runs stay in the database
    before `manage.py retention` exports and removes them; left out, the site's default applies.
    """
    local = check_name(name)
    if keep is not None and not (isinstance(keep, timedelta) and keep > timedelta(0)):
        raise ValueError(f'Workflow "{name}": keep is how long its ended runs are kept, a timedelta longer than '
                         f"zero (keep=timedelta(days=90)), or leave it out for the site's default; got {keep!r}")
    if not callable(run):
        raise TypeError(f'Workflow "{name}": run must be a function run(ctx, input)')
    schema = input if input is not None else NoInput
    if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
        raise TypeError(f'Workflow "{name}": input must be a pydantic model class')
    ops: list[str] = []
    operations: dict[str, Operation] = {}
    builtins: list[str] = []
    if isinstance(uses, (str, bytes)) or (uses is not None and not isinstance(uses, Sequence)):
        raise TypeError(f'Workflow "{name}": uses is a list (or leave it out: it is derived from the ctx calls)')
    for use in uses or ():
        builtin = builtin_of(use)
        if isinstance(use, Operation):
            ops.append(use.id)
            operations[use.id] = use
        elif builtin is not None:
            builtins.append(builtin)
        elif isinstance(use, str) and use.count(".") >= 2:
            ops.append(use)
        else:
            raise ValueError(
                f'Workflow "{name}": uses lists {use!r}, which is neither an operation nor a built-in '
                f'({", ".join(f"Ctx.{b}" for b in BUILTIN_USES)}); or leave uses out: it is derived from the '
                "ctx calls"
            )
    checked_trigger = _check_trigger(name, trigger)
    sla = _check_approval_sla(name, approval_sla)
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
        derived=uses is None,
        approval_sla=sla,
        keep=keep,
    )


def _check_approval_sla(name: str, sla: Any) -> timedelta | None:
    if sla is None:
        return None
    if isinstance(sla, str):
        try:
            return timedelta(seconds=parse_every(sla))
        except ValueError:
            pass
    elif isinstance(sla, timedelta) and sla > timedelta(0):
        return sla
    raise ValueError(f'Workflow "{name}": approval_sla {sla!r} is not a positive duration '
                     "(a timedelta, or '30m', '4h', '2d')")


def builtin_of(use: Any) -> str | None:
    """The built-in a `uses` entry names: `Ctx.sleep` (the typed ctx's method), or the older text "sleep"."""
    if isinstance(use, str):
        return use if use in BUILTIN_USES else None
    qualname = getattr(use, "__qualname__", None)
    if callable(use) and isinstance(qualname, str) and qualname.startswith("Ctx."):
        member = qualname[len("Ctx."):]
        return member if member in BUILTIN_USES else None
    return None


def _check_trigger(name: str, trigger: Any) -> str | Schedule:
    if trigger == "manual" or isinstance(trigger, Schedule):
        return trigger
    if isinstance(trigger, Mapping) and ({"schedule", "every"} & set(trigger)):
        # The older form: say what to write instead, with the same values.
        parts = [f"{key}={trigger[key]!r}" for key in ("timezone", "overlap", "catchup") if key in trigger]
        if "schedule" in trigger:
            written = f"Schedule(cron={trigger['schedule']!r}{''.join(', ' + p for p in parts)})"
        else:
            written = f"Every({trigger['every']!r}{''.join(', ' + p for p in parts)})"
        raise ValueError(f'Workflow "{name}": a trigger is a value now, not a dict: write trigger={written} '
                         "(Schedule and Every come from runs.authoring)")
    raise ValueError(f'Workflow "{name}": trigger is "manual", Schedule(cron="0 9 * * 1-5", '
                     f'timezone="Europe/Helsinki") or Every("15m"); got {trigger!r}')
