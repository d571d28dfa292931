from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sanoma_site.tests.support import VARIABLES, run_settings


@pytest.fixture
def clean_environ(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No settings variable set but SANOMA_VAR_DIR, a fresh folder (returned); all restored afterwards."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    var_dir = tmp_path / "var"
    monkeypatch.setenv("SANOMA_VAR_DIR", str(var_dir))
    # A refused environment installs a hook printing the error as one line: keep it out of pytest.
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    return var_dir


@pytest.fixture
def load_settings(clean_environ: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., dict[str, Any]]:
    """`load_settings(NAME=value, ...)`: the settings with only those variables set (undone after the test)."""

    def load(**environ: str) -> dict[str, Any]:
        for name, value in environ.items():
            monkeypatch.setenv(name, value)
        return run_settings()

    return load
