from __future__ import annotations

from collections.abc import Iterator

import pytest

from connectors.vendors.github.tests.github_server import GitHubServer

TOKEN = "ghp_local0123456789abcdefTOKEN"


@pytest.fixture
def server() -> Iterator[GitHubServer]:
    with GitHubServer(token=TOKEN, org="acme") as running:
        yield running
