"""Runs through the engine on a vendor's real driver, pointed at its local server (for the driver
tests of Resend and Slack)."""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.test import override_settings

from runs import selectors, services
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig, SanomaConfig, resolve_config
from runs.engine import clock, transitions
from runs.models import Run
from runs.testing import drain


@dataclass
class DriverEngine:
    config: ResolvedConfig

    def start(self, workflow: str, input: Any = None, *, by: str = "alice") -> Run:
        return services.start(workflow=workflow, input=input or {}, started_by=by, config=self.config)

    def drain(self) -> int:
        return drain(self.config)

    def run(self, workflow: str, input: Any = None) -> Run:
        run = self.start(workflow, input)
        self.drain()
        run.refresh_from_db()
        return run

    def records(self, run: Run, kind: str | None = None) -> list[dict]:
        return [r for r in selectors.ledger_of(run_id=run.id) if kind is None or r["type"] == kind]

    def later(self, seconds: float) -> Run | None:
        """Move the clock on and drain what woke."""
        clock.advance(timedelta(seconds=seconds))
        self.drain()
        return None

    def take_over(self, run: Run) -> None:
        """What the sweep does to the run of a worker that died: its lease is taken over."""
        assert transitions.take_over(run_id=run.id, owner=run.lease_owner, now=clock.now() + timedelta(minutes=5))


@contextmanager
def engine_on_drivers(connectors: Sequence[Any], workflows: Sequence[Any], policy: Any = None
                      ) -> Iterator[DriverEngine]:
    """The config with every connector on its real driver (their environment from os.environ)."""
    resolved = resolve_config(SanomaConfig(connectors=list(connectors), workflows=list(workflows), policy=policy))
    set_config(resolved)
    try:
        with override_settings(SANOMA_RETRY_DELAYS=(0.01, 0.02)):
            yield DriverEngine(resolved)
    finally:
        set_config(None)
