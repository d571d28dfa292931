"""The one way a layer above the engine plugs into it: an extension, registered when Django starts.

`runs` may not import the apps above it (the layers point one way), yet they add to what it does:
the declared state brings its own connector and built-in workflows, the credentials store gives
drivers their secrets, the life of a change takes over its runs when a worker starts and shows its
checks beside the approval a merge waits for, the wakeups add the runtime's own wakeup type. Each
app says all of it in one value, in its `AppConfig.ready()`:

    from runs.extensions import AppExtension, install

    class WakeupsConfig(AppConfig):
        def ready(self) -> None:
            install(AppExtension(name="wakeup", config=provide,
                                 wakeup_types={"sanoma.wakeup": hand_to_supervisor}))

Every field but `name` is optional; each is asked by the part of the engine it names, in the order
the extensions were installed:

- `config(request)`: what it adds to every resolved config (`runs.config.extensions`);
- `worker_start(config)`: called once a worker has started on `config` (`runs.worker_lifecycle`);
- `secrets(vendor)`, `startup_check(connectors)`, `keep_fresh()`: a connector's secrets for its
  driver, what keeps a worker from starting, keeping values fresh (`runs.engine.secrets`);
- `approval_extras(approval, full)`: a link and a section it shows with an approval
  (`runs.approvals.extras`);
- `declared_approvers(root, connectors)`: the people and groups it declares, whom a policy's
  `@approve` may name (`runs.policies.approvers`);
- `wakeup_types`: a wakeup type's name -> the function its register operation calls (`wakeups`).

Installing a name again replaces that extension.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # loaded with the app registry's setup (an app's `ready` installs), before the models
    from connectors.operations import Connector
    from runs.approvals.extras import Extra
    from runs.config.extensions import Extension, Request
    from runs.models import Approval

ConfigProvider = Callable[["Request"], "Extension | None"]
WorkerStartHook = Callable[[Any], Any]
SecretsSource = Callable[[str], Mapping[str, str]]
StartupCheck = Callable[[Sequence["Connector"]], list[str]]
Refresher = Callable[[], None]
ApprovalExtras = Callable[["Approval", bool], "Extra | None"]
# (root, connectors) -> (usernames, group names) the layer declares.
DeclaredApprovers = Callable[[Path | None, Sequence[Any]], tuple[Collection[str], Collection[str]]]


@dataclass(frozen=True)
class AppExtension:
    """What one app adds to the engine, each field named for the part of the engine that asks it."""

    name: str
    config: ConfigProvider | None = None
    worker_start: WorkerStartHook | None = None
    secrets: SecretsSource | None = None
    startup_check: StartupCheck | None = None
    keep_fresh: Refresher | None = None
    approval_extras: ApprovalExtras | None = None
    declared_approvers: DeclaredApprovers | None = None
    wakeup_types: Mapping[str, Callable[..., Any]] = field(default_factory=dict)


_lock = threading.Lock()
_installed: dict[str, AppExtension] = {}


def install(extension: AppExtension) -> None:
    """Plug `extension` in (replacing one of the same name, in its place)."""
    if not isinstance(extension, AppExtension):
        raise TypeError(f"install() takes an AppExtension; got {type(extension).__name__}")
    with _lock:
        _installed[extension.name] = extension


def update(name: str, **fields: Any) -> None:
    """Set some fields of the extension `name` (made if there is none yet)."""
    with _lock:
        current = _installed.get(name) or AppExtension(name=name)
        _installed[name] = replace(current, **fields)


def uninstall(name: str) -> None:
    with _lock:
        _installed.pop(name, None)


def installed() -> list[AppExtension]:
    """Every extension, in the order installed."""
    with _lock:
        return list(_installed.values())


def providing(what: str) -> list[tuple[str, Any]]:
    """(name, value) of the field `what` of every extension that sets it, in the order installed."""
    return [(e.name, getattr(e, what)) for e in installed() if getattr(e, what)]


__all__ = ["AppExtension", "install", "installed", "providing", "uninstall", "update"]
