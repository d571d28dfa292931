"""The resolved config of this process: resolved once, on first use, the same way everywhere."""
from __future__ import annotations

import threading

from django.conf import settings

from runs.config.resolution import ResolvedConfig, load_config

_lock = threading.Lock()
_current: ResolvedConfig | None = None


def get_config() -> ResolvedConfig:
    global _current
    if _current is None:
        with _lock:
            if _current is None:
                _current = load_config(
                    settings.SANOMA_ROOT,
                    fakes=settings.SANOMA_FAKES,
                    fake_dir=settings.VAR_DIR / "fakes",
                    app_version=settings.SANOMA_APP_VERSION,
                )
    return _current


def set_config(config: ResolvedConfig | None) -> None:
    """Use `config` in this process (tests and scenario runs); None resolves again on next use."""
    global _current
    with _lock:
        _current = config
