"""Where the engine gets a connector's secrets for a driver's `CallContext.secrets`.

The engine does not own the secret store (declared state does, one layer up): that layer
installs its provider when Django starts. Without one, a driver gets no secrets.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

SecretsProvider = Callable[[str], Mapping[str, str]]

_provider: SecretsProvider | None = None


def install(provider: SecretsProvider | None) -> None:
    """Make `provider(vendor)` the source of each connector's secrets (None: none)."""
    global _provider
    _provider = provider


def for_connector(vendor: str) -> Mapping[str, str]:
    """The secrets of `vendor`'s connector: only the names it declared."""
    return {} if _provider is None else _provider(vendor)
