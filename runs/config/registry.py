"""The resolved config of this process: resolved once, on first use, the same way everywhere."""
from __future__ import annotations

import threading
from pathlib import Path

from django.conf import settings

from runs.config.resolution import ResolvedConfig, load_config

_lock = threading.Lock()
_current: ResolvedConfig | None = None
# What the system check (runs.config.checks) resolved, with the settings it was resolved from: a
# command (`manage.py worker`, `start`, ...) runs the checks first, and its first get_config takes
# this one instead of resolving the same root a second time (about 0.15 s of CPU per process).
_checked: tuple[tuple[str, ...], ResolvedConfig] | None = None


def _settings_key() -> tuple[str, ...]:
    return (str(Path(settings.SANOMA_ROOT).resolve()), str(settings.SANOMA_FAKES),
            str(Path(settings.VAR_DIR) / "fakes"), str(settings.SANOMA_APP_VERSION))


def get_config() -> ResolvedConfig:
    global _current, _checked
    if _current is None:
        with _lock:
            if _current is None:
                if _checked is not None and _checked[0] == _settings_key():
                    _current = _checked[1]
                else:
                    _current = load_site_config()
                _checked = None
    return _current


def load_site_config(*, for_check: bool = False) -> ResolvedConfig:
    """The config the settings name, resolved afresh (ConfigError when it does not resolve). With
    `for_check` (the system check), kept for this process's first get_config when none is in use
    yet: taken once, as it was resolved from the same settings."""
    global _checked
    resolved = load_config(
        settings.SANOMA_ROOT,
        fakes=settings.SANOMA_FAKES,
        fake_dir=Path(settings.VAR_DIR) / "fakes",
        app_version=settings.SANOMA_APP_VERSION,
    )
    if for_check:
        with _lock:
            _checked = (_settings_key(), resolved) if _current is None else None
    return resolved


def set_config(config: ResolvedConfig | None) -> None:
    """Use `config` in this process (tests and scenario runs); None resolves again on next use."""
    global _current, _checked
    with _lock:
        _current = config
        _checked = None
