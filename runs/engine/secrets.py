"""Where the engine gets a connector's secrets for a driver's `CallContext.secrets`.

The engine does not own the secret store (the credentials, one layer up in `changes`): that layer
installs its hooks when Django starts. Without them, a driver gets no secrets, every connector's
environment counts as satisfied, and nothing is kept fresh.

Three hooks, each installed by the store:

- `install(provider)`: `provider(vendor)` gives the secrets of one connector, only the names it declared;
- `install_startup_check(check)`: `check(connectors)` lists what stops a worker from starting (a variable
  missing or invalid), one line each; `manage.py worker` (in `wakeups`, which may not import `changes`)
  asks `startup_problems` before it starts anything;
- `install_refresher(refresher)`: `keep_fresh()` asks the store to keep its values fresh in this process
  and in the processes it forks (the worker's cluster), picking up a set, changed or cleared value.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from connectors.operations import Connector

SecretsProvider = Callable[[str], Mapping[str, str]]
StartupCheck = Callable[[Sequence[Connector]], list[str]]
Refresher = Callable[[], None]

_provider: SecretsProvider | None = None
_startup_check: StartupCheck | None = None
_refresher: Refresher | None = None


def install(provider: SecretsProvider | None) -> None:
    """Make `provider(vendor)` the source of each connector's secrets (None: none)."""
    global _provider
    _provider = provider


def install_startup_check(check: StartupCheck | None) -> None:
    """Make `check(connectors)` say what stops a worker running those connectors' drivers (None: nothing)."""
    global _startup_check
    _startup_check = check


def install_refresher(refresher: Refresher | None) -> None:
    """Make `refresher()` what `keep_fresh` runs (None: nothing)."""
    global _refresher
    _refresher = refresher


def for_connector(vendor: str) -> Mapping[str, str]:
    """The secrets of `vendor`'s connector: only the names it declared."""
    return {} if _provider is None else _provider(vendor)


def startup_problems(connectors: Sequence[Connector]) -> list[str]:
    """Every variable of `connectors` that is missing or invalid, one line each (none: all is well)."""
    return [] if _startup_check is None else _startup_check(connectors)


def keep_fresh() -> None:
    """This process (and the ones it forks) picks up changed secrets without being restarted."""
    if _refresher is not None:
        _refresher()
