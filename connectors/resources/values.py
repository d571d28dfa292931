"""What a resource declaration holds: literal values, secrets named, references to other resources;
the problems and changes found in them, and the field options."""
from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

RESOURCE_EFFECTS = ("read", "write", "publish", "send", "money", "access")  # the same list as EFFECTS

VERBS = ("import", "read", "create", "update", "delete")

CHANGE_VERBS = ("create", "update", "delete")

FIELD_OPTIONS = ("immutable", "vendor_owned", "write_only", "unordered", "references", "by")

_TYPE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")

_TYPE_KEY = re.compile(r"^[a-z][a-z0-9_-]*\.[a-z][a-z0-9_]*$")

ModelClass = type[BaseModel]

builtin_type = type  # define_resource takes a parameter named `type`


@dataclass(frozen=True)
class Secret:
    """`secret("NAME")`: a value kept out of the repo, filled in by name when it is sent."""

    name: str

    def plain(self) -> dict[str, str]:
        return {"secret": self.name}


@dataclass(frozen=True)
class Ref:
    """A reference to another declared resource: its id (`<file>#<name>`), type key and name."""

    id: str
    type: str
    name: str

    def plain(self) -> dict[str, str]:
        return {"ref": self.id}


@dataclass(frozen=True)
class Declaration:
    """What calling a type (`shop.product(sku=...)`) gives when a data file is run as Python."""

    type: str
    values: Mapping[str, Any]


def plain_value(value: Any) -> Any:
    """A declared value as JSON: a reference is `{"ref": id}`, a secret `{"secret": name}`."""
    if isinstance(value, (Ref, Secret)):
        return value.plain()
    if isinstance(value, Mapping):
        return {str(k): plain_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    return value


@dataclass(frozen=True)
class ValueProblem:
    """Why a declared value is refused; `field` is None for a problem with the whole declaration."""

    field: str | None
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class FieldChange:
    """One field that differs between what is declared and what the vendor holds."""

    field: str
    desired: Any
    actual: Any
    replace: bool  # the field is immutable (or the identity): the instance must be made anew


@dataclass(frozen=True)
class FieldOptions:
    immutable: bool = False
    vendor_owned: bool = False
    write_only: bool = False
    unordered: bool = False
    references: str | None = None
    by: tuple[str, ...] = ()


_NO_OPTIONS = FieldOptions()


def _canonical(value: Any) -> str:
    return json.dumps(plain_value(value), sort_keys=True, default=str)


def _multiset(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return Counter(_canonical(v) for v in value)
    return _canonical(value)


def is_secret_marker(value: Any) -> bool:
    """`{"secret": "NAME"}`: a secret by name, as JSON."""
    return isinstance(value, Mapping) and len(value) == 1 and isinstance(value.get("secret"), str) \
        and bool(value["secret"])


def _has_marker(value: Any) -> bool:
    if isinstance(value, (Ref, Secret)):
        return True
    if isinstance(value, Mapping):
        return any(_has_marker(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_marker(v) for v in value)
    return False


def _markers(key: str, value: Any, problems: list[ValueProblem]) -> list[Ref | Secret] | None:
    """The references and secrets of a field's value: the value itself, or items of its list.
    Deeper than that is a problem (None)."""
    if isinstance(value, (Ref, Secret)):
        return [value]
    if isinstance(value, (list, tuple)):
        found: list[Ref | Secret] = []
        for item in value:
            if isinstance(item, (Ref, Secret)):
                found.append(item)
            elif _has_marker(item):
                problems.append(ValueProblem(key, f"{key}: a reference or secret goes directly in the field "
                                                  f"or in its list, not deeper"))
                return None
        return found
    if _has_marker(value):
        problems.append(ValueProblem(key, f"{key}: a reference or secret goes directly in the field or in its "
                                          f"list, not deeper"))
        return None
    return []
