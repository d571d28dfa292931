"""The `sanoma.local` hosts' drivers and the `sanoma.source` operations, as a layer above installs them.

The data files declare hosts (`sanoma.local`: this machine's live config root as a deploy target),
and sanoma's own connector (`changes.resources.people`) carries their type. What deploys to one,
and where a host's revision comes from (`sanoma.source.resolve`), belong to the life of a change,
which installs them here with its extension (`changes.lifecycle.extension.install`), so the
declared state never imports it. Without them a host is declared, read and compared as before, and
a call that would deploy to it is refused.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from connectors.drivers import CallContext
from connectors.errors import DriverError
from connectors.operations import Connector

Functions = Callable[[Any, Callable[[], Sequence[Connector]]], Mapping[str, Mapping[str, Any]]]


@dataclass(frozen=True)
class Hosts:
    """`operations`: `{resource: {verb: op}}` added to sanoma's connector (`source.resolve`);
    `functions(root, connectors)`: `{resource: {verb: fn}}` for `local` and those operations."""

    operations: Mapping[str, Mapping[str, Any]]
    functions: Functions


_lock = threading.Lock()
_installed: Hosts | None = None


def install(hosts: Hosts | None) -> None:
    """Use `hosts` for the connectors made from now on (None: none installed)."""
    global _installed
    with _lock:
        _installed = hosts


def _refuse(i: Any, c: CallContext) -> dict[str, Any]:
    raise DriverError(f"{c.op_id}: nothing deploys to a host in this site (the life of a change is not installed)",
                      retryable=False)


def operations() -> dict[str, Mapping[str, Any]]:
    with _lock:
        return dict(_installed.operations) if _installed is not None else {}


def functions(root: Any, connectors: Callable[[], Sequence[Connector]]) -> dict[str, Mapping[str, Any]]:
    with _lock:
        installed = _installed
    if installed is None:
        return {"local": {verb: _refuse for verb in ("import", "read", "create", "update", "delete")}}
    return dict(installed.functions(root, connectors))


__all__ = ["Hosts", "functions", "install", "operations"]
