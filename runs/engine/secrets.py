"""Where the engine gets a connector's secrets for a driver's `CallContext.secrets`.

The engine does not own the secret store (the credentials, one layer up in `changes`): that layer's
extension (`runs.extensions`) names its `secrets`, `startup_check` and `keep_fresh`. Without one, a
driver gets no secrets, every connector's environment counts as satisfied, and nothing is kept fresh.

- `secrets(vendor)` gives the secrets of one connector, only the names it declared;
- `startup_check(connectors)` lists what stops a worker from starting (a variable missing or
  invalid), one line each; the worker (in `wakeups`, which may not import `changes`) asks
  `startup_problems` before it starts anything;
- `keep_fresh()` asks the store to keep its values fresh in this process and in the processes it
  forks (the worker's cluster), picking up a set, changed or cleared value.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from connectors.operations import Connector
from runs.extensions import providing


def for_connector(vendor: str) -> Mapping[str, str]:
    """The secrets of `vendor`'s connector: only the names it declared."""
    found: dict[str, str] = {}
    for _, source in providing("secrets"):
        found.update(source(vendor))
    return found


def startup_problems(connectors: Sequence[Connector]) -> list[str]:
    """Every variable of `connectors` that is missing or invalid, one line each (none: all is well)."""
    return [problem for _, check in providing("startup_check") for problem in check(connectors)]


def keep_fresh() -> None:
    """This process (and the ones it forks) picks up changed secrets without being restarted."""
    for _, refresher in providing("keep_fresh"):
        refresher()
