"""Shared fixtures: the example company resolved on in-memory fakes, users, and a drain loop."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _clean_process_state():
    from runs.engine import clock, faults

    yield
    faults.clear()
    clock.reset()
