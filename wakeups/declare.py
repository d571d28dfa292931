"""Wakeups: what restarts a stopped worker in time. A wakeup type has one operation, `register`
(effect `write`), handed the next deadline; `sanoma.wakeup` is the runtime's own.

Until data files can declare resources, a config root declares its wakeup in `sanoma_config.py`:

    from runs.authoring import wakeup
    wakeups = [wakeup(host="supervisor")]

`wakeup(...)` is a plain value (`runs.declarations.Wakeup`); this module gives it its register half
(`declared_wakeups`). `sanoma_wakeup(...)` is the older spelling, with the half attached.

`SANOMA_WAKEUP=off` ignores what the root declares (the worker then never stops itself).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection
from pydantic import BaseModel

from connectors.drivers import CallContext
from runs.config.resolution import ResolvedConfig
from runs.declarations import Wakeup
from runs.extensions import providing

log = logging.getLogger("sanoma.wakeup")

WAKEUP_AGENT = "wakeup"
REGISTER_OP = "sanoma.wakeup.register"
SANOMA_WAKEUP = "sanoma.wakeup"  # the runtime's own wakeup type
# The PostgreSQL channel a supervisor listens on for registrations.
WAKEUP_CHANNEL = "sanoma_wakeup"


class RegisterInput(BaseModel):
    """The input of a wakeup's register operation: the deadline to be woken at."""

    model_config = {"extra": "forbid"}
    at: datetime


@dataclass(frozen=True, eq=False)
class WakeupDeclaration:
    """One declared wakeup: its id (the binding), its type's register function and its secrets."""

    id: str
    register: Callable[[RegisterInput, CallContext], Any]
    type: str = "sanoma.wakeup"
    host: str = ""
    secrets: Mapping[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"<wakeup {self.id} ({self.type}, host={self.host!r})>"


def hand_to_supervisor(payload: RegisterInput, context: CallContext) -> dict[str, Any]:
    """`sanoma.wakeup.register`: the deadline goes on the wakeup row (the stop rule writes it); on
    PostgreSQL a NOTIFY tells a listening supervisor to read it again."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [WAKEUP_CHANNEL, payload.at.isoformat()])
    return {"at": payload.at.isoformat(), "key": context.idempotency_key}


def sanoma_wakeup(*, host: str = "supervisor", id: str = "sanoma.wakeup") -> WakeupDeclaration:
    """The built-in wakeup: `manage.py supervise` (or a systemd timer) starts the worker again."""
    return WakeupDeclaration(id=id, register=hand_to_supervisor, type="sanoma.wakeup", host=host)


def registers() -> dict[str, Callable[[RegisterInput, CallContext], Any]]:
    """A wakeup type -> the function its register operation calls: what the extensions name
    (`wakeup_types`, `runs.extensions`)."""
    return {kind: fn for _, types in providing("wakeup_types") for kind, fn in types.items()}


def declaration_of(declared: Wakeup) -> WakeupDeclaration:
    """A `wakeup(...)` value with its type's register half."""
    return WakeupDeclaration(id=declared.id, register=registers()[declared.type], type=declared.type,
                             host=declared.host)


def declared_wakeups(config: ResolvedConfig) -> list[WakeupDeclaration]:
    """The wakeups the config root declares (`wakeups = [...]` in sanoma_config.py, read with the
    config: `ResolvedConfig.wakeups`): `wakeup(...)` values, or `sanoma_wakeup(...)` declarations."""
    if getattr(settings, "SANOMA_WAKEUP", "") == "off" or config.root is None:
        return []
    declared: Sequence[Any] = config.wakeups
    return [declaration_of(w) if isinstance(w, Wakeup) else w for w in declared
            if isinstance(w, (Wakeup, WakeupDeclaration))]
