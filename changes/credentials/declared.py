"""A connector's declared environment, and the status of each of its variables.

A connector's `environment` is a pydantic model: each field is a variable named by the field's name
in upper case, described by the field's description, optional when it has a default, and checked
by the model's types and validators. A variable's status is the truth about its value:

- `set`: the environment or the store gives it a value, and the connector's check takes it;
- `missing`: it is required and nothing gives it a value;
- `not_set`: it is optional and nothing sets it (the driver gets its default, if it has one);
- `invalid`: its value fails the connector's check, or its stored value cannot be decrypted
  (with the first problem).

Its value never leaves this module in a status, a message or a log.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from connectors.operations import Connector

Status = Literal["set", "missing", "not_set", "invalid"]
Source = Literal["environment", "stored", "default", "none"]
THREW = "its check threw"


@dataclass(frozen=True)
class Variable:
    connector: str
    name: str  # the variable: the field's name in upper case
    field: str  # the model's field
    description: str
    required: bool
    default: str | None  # an optional variable's default, as the text a driver gets (None: no value)


@dataclass(frozen=True)
class VariableStatus:
    connector: str
    name: str
    description: str
    status: Status
    problem: str | None
    source: Source
    # Where data files name it (`secret("NAME")`): `resources/webhooks.py:5 (orders_hook)`.
    needed_by: tuple[str, ...] = ()
    # Every connector declaring the variable, in the config's order (`connector` names them all,
    # `github, sanoma`, when more than one reads it: one value serves them all).
    used_by: tuple[str, ...] = ()
    # Each user's description, `github: a token with ...`, when more than one declares it.
    descriptions: tuple[str, ...] = ()

    @property
    def shown(self) -> str:
        """The status as a person reads it: `set`, `missing`, `not set`, `invalid`."""
        return self.status.replace("_", " ")

    def describe(self) -> str:
        """One line for a person: `shop: SHOP_API_URL is missing (the shop's API base URL)`."""
        if self.status == "missing":
            return f"{self.connector}: {self.name} is missing ({self.problem or self.description or 'no description'})"
        if self.status == "invalid":
            return f"{self.connector}: {self.name} is invalid ({self.source}): {self.problem}"
        if self.status == "not_set":
            return f"{self.connector}: {self.name} is not set ({self.note})"
        return f"{self.connector}: {self.name} is set ({self.source})"

    @property
    def note(self) -> str:
        """Beside a status without a problem: what the driver gets when nothing sets the variable."""
        if self.status != "not_set":
            return ""
        return "optional, the driver gets its default" if self.source == "default" else \
            "optional, the driver gets no value"


@dataclass(frozen=True)
class Unreadable:
    """A stored value that cannot be decrypted, and why."""

    reason: str


def has_value(default: str | None) -> bool:
    """A default that gives the driver something: not None, not empty (an empty variable is unset)."""
    return default is not None and default != ""


def variables(connector: Connector) -> list[Variable]:
    """The variables `connector`'s environment declares, in the model's order (none without one)."""
    model = connector.environment
    if model is None:
        return []
    found = []
    for field_name, info in model.model_fields.items():
        default: Any = None if info.is_required() else info.get_default(call_default_factory=True)
        found.append(Variable(
            connector=connector.vendor, name=field_name.upper(), field=field_name,
            description=(info.description or "").strip(), required=info.is_required(),
            default=None if default is None else str(default),
        ))
    return found


def declared_names(connectors: Iterable[Connector]) -> dict[str, list[Variable]]:
    """Every declared variable name, with the connectors' declarations of it (two may share a name)."""
    names: dict[str, list[Variable]] = {}
    for connector in connectors:
        for variable in variables(connector):
            names.setdefault(variable.name, []).append(variable)
    return names


def _scrub(message: str, values: Iterable[str]) -> str:
    """A problem never repeats a value, even when a check's own message would."""
    for value in values:
        if value and len(value) >= 3:
            message = message.replace(value, "(the value)")
    return message


def _message(issue: Mapping[str, Any]) -> str:
    """A validation issue's message, without pydantic's "Value error, " prefix."""
    message = str(issue.get("msg") or "invalid")
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    return message


def _first_problems(model: type[BaseModel], data: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """Validate `data` (field -> text): the first problem of each field, and the model-wide problems.

    A ValidationError is read; any other exception (a check that threw) is narrowed to the field whose
    check threw by validating each field alone.
    """
    try:
        model.model_validate(dict(data))
        return {}, []
    except ValidationError as err:
        per_field: dict[str, str] = {}
        whole: list[str] = []
        for issue in err.errors(include_url=False, include_input=False, include_context=False):
            loc = issue.get("loc") or ()
            if loc and loc[0] in data:
                per_field.setdefault(str(loc[0]), _message(issue))
            elif not loc:
                whole.append(_message(issue))
        return per_field, whole
    except Exception as err:  # a check raised something that is not a validation error
        thrown = f"{THREW} ({type(err).__name__})"
    per_field = {}
    for field_name, value in data.items():
        try:
            model.model_validate({field_name: value})
        except ValidationError as err:
            mine = [i for i in err.errors(include_url=False, include_input=False, include_context=False)
                    if (i.get("loc") or ())[:1] == (field_name,)]
            if mine:
                per_field[field_name] = _message(mine[0])
        except Exception as err:
            per_field[field_name] = f"{THREW} ({type(err).__name__})"
    return per_field, ([] if per_field else [thrown])


def evaluate(
    connector: Connector,
    *,
    environ: Mapping[str, str],
    stored: Mapping[str, str | Unreadable],
) -> list[VariableStatus]:
    """The status of each of `connector`'s variables: the environment wins over a stored value, a
    stored value over the default. An empty environment variable counts as unset."""
    model = connector.environment
    if model is None:
        return []
    declared = variables(connector)
    data: dict[str, str] = {}
    source: dict[str, Source] = {}
    unreadable: dict[str, str] = {}
    for variable in declared:
        from_env = environ.get(variable.name, "")
        if from_env != "":
            data[variable.field], source[variable.field] = from_env, "environment"
        elif variable.name in stored:
            value = stored[variable.name]
            source[variable.field] = "stored"
            if isinstance(value, Unreadable):
                unreadable[variable.field] = f"stored, but {value.reason}"
            else:
                data[variable.field] = value
        elif not variable.required and has_value(variable.default):
            source[variable.field] = "default"
        else:
            source[variable.field] = "none"
    per_field, whole = _first_problems(model, data)
    values = list(data.values())
    statuses = []
    for variable in declared:
        src = source[variable.field]
        problem = unreadable.get(variable.field) or per_field.get(variable.field)
        if problem is None and whole and variable.field in data:
            problem = whole[0]  # a check of the whole model refused: every value given is suspect
        if problem is not None:
            status: Status = "invalid"
        elif src in ("environment", "stored"):
            status = "set"
        elif variable.required:
            status = "missing"
        else:  # optional, and nobody set it
            status = "not_set"
        statuses.append(VariableStatus(
            connector=variable.connector, name=variable.name, description=variable.description, status=status,
            problem=None if problem is None else _scrub(problem, values), source=src,
        ))
    return statuses


def check_value(connector: Connector, *, name: str, value: str, environ: Mapping[str, str],
                stored: Mapping[str, str | Unreadable]) -> str | None:
    """The problem the connector's check finds with `value` as `name` (the other variables as they are
    now, save those set in the environment being left as stored), or None."""
    others = {k: v for k, v in stored.items() if k != name}
    env = {k: v for k, v in environ.items() if k != name}
    for status in evaluate(connector, environ=env, stored={**others, name: value}):
        if status.name == name:
            return _scrub(status.problem, [value]) if status.status == "invalid" and status.problem else None
    return None
