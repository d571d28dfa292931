"""Which remote serves the company's repository: the connectors' own remote halves first (in
connector order), then the two built in: GitHub over its REST API (a `https://github.com/...` URL,
or one under SANOMA_GITHUB_URL), and the embedded default, a git repository on this machine (a
path or `file://` URL)."""
from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from pydantic import BaseModel, Field

from changes.credentials.runtime import read_stored
from changes.lifecycle.remotes.git import GitRemote
from changes.lifecycle.remotes.github import GitHubRemote
from connectors.operations import Connector
from connectors.remotes import Remote, remote_for


class RemoteEnvironment(BaseModel):
    """What the built-in remotes read: set in the environment or with `manage.py credentials set`."""

    GITHUB_TOKEN: str = Field(default="", description="the change workflow's GitHub remote (a repository on "
                                                      "GitHub): Contents and Pull requests read-write, Checks read")
    SANOMA_GITHUB_WEBHOOK_SECRET: str = Field(default="", description="the secret of the repository's webhook to "
                                                                      "/api/changes/webhooks/github")


_lock = threading.Lock()
_made: dict[int, Any] = {}


def variable(name: str) -> str:
    """One of RemoteEnvironment's variables: the environment's value, else the stored one, else ""."""
    if name not in RemoteEnvironment.model_fields:
        raise KeyError(f"{name} is not a variable of the built-in remotes")
    from_env = os.environ.get(name, "")
    if from_env:
        return from_env
    stored = read_stored().get(name)
    return stored if isinstance(stored, str) else ""


def builtin_remotes() -> list[Remote]:
    """GitHub (its token read from the credentials when a call needs it) and the embedded git remote."""
    github = GitHubRemote(api_url=str(settings.SANOMA_GITHUB_API_URL), web_url=str(settings.SANOMA_GITHUB_URL),
                          token=lambda: variable("GITHUB_TOKEN") or None)
    return [github, GitRemote()]


def remotes_of(connectors: Sequence[Connector]) -> list[Remote]:
    """The connectors' remote halves (each made once per process), then the built-in ones."""
    found: list[Remote] = []
    for connector in connectors:
        if connector.remote is None:
            continue
        with _lock:
            if id(connector.remote) not in _made:
                _made[id(connector.remote)] = connector.remote()
            found.append(_made[id(connector.remote)])
    return [*found, *builtin_remotes()]


def remote_of(url: str, connectors: Sequence[Connector]) -> Remote:
    return remote_for(url, remotes_of(connectors))


__all__ = ["RemoteEnvironment", "builtin_remotes", "remote_of", "remotes_of", "variable"]
