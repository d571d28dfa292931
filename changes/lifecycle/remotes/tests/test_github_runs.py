"""The `github` connector's driver through real runs on the engine, against the local GitHub (the one
server the change workflow's remote is tested against too): GitHub's secondary and primary rate
limits waited out durably (the run waits, no thread sleeps), a 5xx retried only for an idempotent
operation, a final 4xx failing the run with GitHub's message."""
from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.test import override_settings
from pydantic import BaseModel

from connectors.vendors.github import github
from connectors.vendors.github.tests.github_server import GitHubServer
from runs import selectors, services
from runs.authoring import SanomaConfig, define_workflow
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig, resolve_config
from runs.engine import clock
from runs.models import Run, RunStatus
from runs.testing import drain, make_user

TOKEN = "ghp_local0123456789abcdefTOKEN"


@pytest.fixture
def server() -> Iterator[GitHubServer]:
    with GitHubServer(token=TOKEN, org="acme") as running:
        yield running


class Named(BaseModel):
    name: str


class Branch(BaseModel):
    branch: str


def list_repositories(ctx, input):
    return {"n": len(ctx.github.repository.list({}).repositories)}


def create_repository(ctx, input):
    return {"id": ctx.github.repository.create({"desired": {"name": input.name}}).id}


def protect(ctx, input):
    return {"id": ctx.github.branch_protection.create(
        {"desired": {"repository": "site", "pattern": input.branch}}).id}


WORKFLOWS = [
    define_workflow(name="gh-list", uses=[github.op("github.repository.list")], run=list_repositories),
    define_workflow(name="gh-create", uses=[github.op("github.repository.create")], run=create_repository,
                    input=Named),
    define_workflow(name="gh-protect", uses=[github.op("github.branch_protection.create")], run=protect,
                    input=Branch),
]


@pytest.fixture
def engine(db, server, monkeypatch) -> Iterator[ResolvedConfig]:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_ORG", "acme")
    monkeypatch.setenv("GITHUB_API_URL", server.url)
    make_user("alice", perms=["runs.start_workflow"])
    config = resolve_config(SanomaConfig(app_name="ghco", connectors=[github], workflows=WORKFLOWS))
    set_config(config)
    with override_settings(SANOMA_RETRY_DELAYS=(0.01, 0.02)):
        yield config
    set_config(None)


def run(config: ResolvedConfig, workflow: str, input: dict[str, Any] | None = None) -> Run:
    started = services.start(workflow=workflow, input=input or {}, started_by="alice", config=config)
    drain(config)
    started.refresh_from_db()
    return started


def records(run: Run, kind: str) -> list[dict[str, Any]]:
    return [r for r in selectors.ledger_of(run_id=run.id) if r["type"] == kind]


@pytest.mark.parametrize("status", [429, 403])
def test_a_secondary_rate_limit_is_waited_out_durably_by_the_run(engine, server, status):
    server.secondary_limit(1, status=status, retry_after=30)
    began = time.monotonic()
    waiting = run(engine, "gh-list")
    assert time.monotonic() - began < 10  # no thread slept out the 30 s
    assert (waiting.status, waiting.waiting_for, waiting.lease_owner) == (RunStatus.WAITING, "retry", "")
    [failed] = records(waiting, "op.attempt_failed")
    assert (failed["error"]["status"], failed["wait_ms"]) == (status, 30_000)
    assert "secondary rate limit" in failed["error"]["message"]
    clock.advance(timedelta(seconds=20))
    drain(engine)
    waiting.refresh_from_db()
    assert waiting.status == RunStatus.WAITING and len(server.received) == 1  # not before GitHub's time
    clock.advance(timedelta(seconds=11))
    drain(engine)
    waiting.refresh_from_db()
    assert (waiting.status, waiting.result) == (RunStatus.FINISHED, {"n": 0})
    assert records(waiting, "op.called")[0]["attempt"] == 2 and len(server.received) == 2


def test_the_primary_rate_limit_is_waited_out_until_githubs_reset(engine, server):
    reset = server.primary_limit(1, reset_in=40)
    waiting = run(engine, "gh-list")
    assert (waiting.status, waiting.waiting_for) == (RunStatus.WAITING, "retry")
    [failed] = records(waiting, "op.attempt_failed")
    assert failed["error"]["status"] == 403
    assert failed["wait_ms"] == pytest.approx((reset - time.time()) * 1000, abs=2000)


def test_a_server_error_is_retried_for_an_idempotent_operation(engine, server):
    server.server_error(1, status=502)
    done = run(engine, "gh-list")
    assert (done.status, done.result) == (RunStatus.FINISHED, {"n": 0})
    assert [r["error"]["status"] for r in records(done, "op.attempt_failed")] == [502]
    assert len(server.requests_to("GET", "/orgs/acme/repos")) == 2


def test_a_server_error_is_not_retried_for_a_repository_create(engine, server):
    server.server_error(1, status=502, method="POST")
    failed = run(engine, "gh-create", {"name": "site"})
    assert failed.status == RunStatus.FAILED and not records(failed, "op.attempt_failed")
    assert failed.error is not None
    assert failed.error["message"] == "GitHub answered 502 to POST /orgs/acme/repos: Server Error"
    assert len(server.requests_to("POST", "/orgs/acme/repos")) == 1  # tried once


def test_a_final_refusal_fails_the_run_with_githubs_message(engine, server):
    failed = run(engine, "gh-protect", {"branch": "main"})  # no repository site
    assert failed.status == RunStatus.FAILED and failed.error is not None
    assert failed.error["message"] == "GitHub answered 404 to PUT /repos/acme/site/branches/main/protection: Not Found"
    [called] = records(failed, "op.called")
    assert (called["error"]["status"], called["error"]["retryable"]) == (404, False)
