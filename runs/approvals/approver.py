"""Who an approval waits for: a person (`"alice"`) or a group (`"group:finance"`).

Stored and recorded as that one string; `Approver.parse` reads it, `str()` writes it back.
Plain Python, no Django.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

GROUP_PREFIX = "group:"


@dataclass(frozen=True)
class Approver:
    """A person's username, or a group's name (`is_group`)."""

    name: str
    is_group: bool = False

    @classmethod
    def parse(cls, text: str) -> Approver:
        """`"group:<name>"` is a group; anything else is a person's username."""
        if text.startswith(GROUP_PREFIX):
            return cls(text[len(GROUP_PREFIX):], is_group=True)
        return cls(text)

    @classmethod
    def group_named(cls, name: str) -> Approver:
        return cls(name, is_group=True)

    @classmethod
    def normalise(cls, given: Any) -> Approver | None:
        """A person id string, `"group:<name>"`, or `{"group": name}`, with the spaces around the
        name dropped; None when it names nobody."""
        if isinstance(given, Mapping):
            if set(given) != {"group"}:
                return None
            name = given.get("group")
            if not isinstance(name, str) or not name.strip():
                return None
            return cls.group_named(name.strip())
        if isinstance(given, str):
            text = given.strip()
            if not text:
                return None
            parsed = cls.parse(text)
            if parsed.is_group:
                return cls.group_named(parsed.name.strip()) if parsed.name.strip() else None
            return parsed
        return None

    @property
    def group(self) -> str | None:
        """The group's name, or None for a person."""
        return self.name if self.is_group else None

    @property
    def shown(self) -> str:
        """How a title names it: "alice", or "group finance"."""
        return f"group {self.name}" if self.is_group else self.name

    def __str__(self) -> str:
        return GROUP_PREFIX + self.name if self.is_group else self.name
