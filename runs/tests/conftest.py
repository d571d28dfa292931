from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.test import override_settings

from runs import selectors, services
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig, SanomaConfig
from runs.models import Run
from runs.testing import drain, make_user, resolve_on_fakes
from runs.tests.fixtures import acme


@dataclass
class Engine:
    config: ResolvedConfig

    @property
    def fake(self) -> Any:
        return self.config.fakes["acme"]

    def start(self, workflow: str, input: Any = None, *, by: str = "alice", run_id: str | None = None) -> Run:
        return services.start(workflow=workflow, input=input or {}, started_by=by, run_id=run_id, config=self.config)

    def drain(self) -> int:
        return drain(self.config)

    def run(self, workflow: str, input: Any = None, **kwargs: Any) -> Run:
        run = self.start(workflow, input, **kwargs)
        self.drain()
        run.refresh_from_db()
        return run

    def kinds(self, run: Run) -> list[str]:
        return [r["type"] for r in selectors.ledger_of(run_id=run.id)]

    def records(self, run: Run, kind: str | None = None) -> list[dict]:
        return [r for r in selectors.ledger_of(run_id=run.id) if kind is None or r["type"] == kind]


@pytest.fixture
def alice(db):
    return make_user("alice", perms=["runs.start_workflow"])


@pytest.fixture
def engine_for(db, alice):
    made: list[ResolvedConfig] = []

    def build(*workflows: Any, policy: Any = None, connectors: Any = None, **config: Any) -> Engine:
        resolved = resolve_on_fakes(
            SanomaConfig(connectors=connectors or [acme], workflows=list(workflows), policy=policy, **config)
        )
        set_config(resolved)
        made.append(resolved)
        return Engine(resolved)

    with override_settings(SANOMA_RETRY_DELAYS=(0.01, 0.02)):
        yield build
    set_config(None)
