"""The `github` connector's fake: the real driver's operations against GitHub emulated in memory
(`emulator.GitHub` over the fake's JSON state), so it answers exactly as GitHub would: a repeated
repository create is GitHub's 422, read as the driver reads it; a protection of a branch that is not
there is GitHub's 404 "Branch not found"; a person not in the organization is invited (`pending`).

Its state is the organization's (`emulator.initial_state`): `org`, `repos`, `branches`,
`protections`, `teams` (each with its `memberships`) and `members`. A test or a scenario changes it
by hand with `fake.update(...)`; the fake's faults (`fail_next`, `rate_limit`, `lose_reply`, `hold`)
work as for every fake.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from connectors.drivers import CallContext
from connectors.fakes import define_fake
from connectors.vendors.github.api import PUBLIC_API, GitHubClient
from connectors.vendors.github.connector import github
from connectors.vendors.github.driver import OPERATIONS, Session, SessionFn
from connectors.vendors.github.emulator import GitHub, initial_state

if TYPE_CHECKING:
    import httpx

FAKE_TOKEN = "fake-github-token"


def emulated(state: dict[str, Any]) -> Session:
    """A session whose requests GitHub's emulator answers from `state` (edited in place)."""
    import httpx  # at the fake's first call, as the real driver's (connectors.http.client)

    vendor = GitHub(state, base=PUBLIC_API)

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        query = dict(request.url.params)
        reply = vendor.answer(request.method, request.url.raw_path.decode().split("?")[0], query, body)
        return httpx.Response(reply.status, headers=reply.headers,
                              content=b"" if reply.body is None else json.dumps(reply.body).encode())

    client = GitHubClient(PUBLIC_API, token=lambda: FAKE_TOKEN, transport=httpx.MockTransport(answer))
    return Session(client, state["org"])


def _in_memory(fn: SessionFn) -> Callable[[dict[str, Any], Any, CallContext], dict[str, Any]]:
    def call(state: dict[str, Any], i: Any, c: CallContext) -> dict[str, Any]:
        session = emulated(state)
        try:
            return fn(session, i, c)
        finally:
            session.client.close()

    return call


def make_fake(file: Path | None = None):
    return define_fake(github, initial=initial_state,
                       ops={resource: {name: _in_memory(fn) for name, fn in ops.items()}
                            for resource, ops in OPERATIONS.items()},
                       file=file)


__all__ = ["FAKE_TOKEN", "emulated", "make_fake"]
