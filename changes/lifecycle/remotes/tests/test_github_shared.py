"""The change workflow's GitHub remote and the `github` connector are one GitHub client, tested
against one local GitHub: the same headers on every request, the same reading of GitHub's rate
limits as a wait (a secondary limit too), on one server holding a git repository and the
organization's settings at once. No database."""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from changes.lifecycle.remotes.github import GitHubRemote
from changes.lifecycle.remotes.tests.github_server import GitHubServer, Repo
from connectors.drivers import CallContext
from connectors.errors import RemoteError
from connectors.vendors.github import github
from connectors.vendors.github.api import GitHubClient

TOKEN = "ghp_shared0123456789abcdefTOKEN"
URL = "https://github.com/acme/config"


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path / "repo", {"README.md": "The company.\n"})


@pytest.fixture
def server(repo: Repo) -> Iterator[GitHubServer]:
    with GitHubServer({"acme/config": repo.bare}, token=TOKEN, org="acme") as running:
        yield running


def connector_call(server: GitHubServer, op: str, payload: dict) -> dict:
    operation = github.op(f"github.{op}")
    context = CallContext(idempotency_key="run_1:1", run_id="run_1", op_id=operation.id, timeout=5,
                          deadline=time.time() + 5,
                          secrets={"GITHUB_TOKEN": TOKEN, "GITHUB_ORG": "acme", "GITHUB_API_URL": server.url})
    return github.driver().call(operation.id, operation.input.model_validate(payload), context)  # type: ignore[misc]


def test_one_server_answers_the_remote_and_the_connector_with_the_same_headers(repo, server):
    remote = GitHubRemote(api_url=server.url, token=lambda: TOKEN, timeout=5)
    assert isinstance(remote.client, GitHubClient)
    assert remote.resolve(URL, branch="main").sha == repo.sha("main")
    made = connector_call(server, "repository.create", {"desired": {"name": "site"}})
    assert made["id"] == "site" and server.state.org["repos"]["site"]["visibility"] == "private"
    sent = [(r["method"], r["path"], r["accept"], r["api_version"], r["authorized"]) for r in server.requests]
    assert {s[2:] for s in sent} == {("application/vnd.github+json", "2022-11-28", True)}
    assert [s[:2] for s in sent][-1] == ("POST", "/orgs/acme/repos")


@pytest.mark.parametrize(("status", "retry_after", "waits"), [(429, 17, 17.0), (403, None, 60.0)])
def test_the_remote_reads_a_secondary_rate_limit_as_the_connector_does(server, status, retry_after, waits):
    server.secondary_limit(1, status=status, retry_after=retry_after)
    remote = GitHubRemote(api_url=server.url, token=lambda: TOKEN, timeout=5)
    with pytest.raises(RemoteError) as raised:
        remote.resolve(URL, branch="main")
    limited = raised.value
    assert (limited.code, limited.retryable, limited.status, limited.retry_after) == (
        "driver_failed", True, status, waits)
    assert "secondary rate limit" in limited.message and limited.data["status"] == status
