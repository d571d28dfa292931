"""The local GitHub the change workflow's tests use: the one local GitHub server, shared with the
`github` connector's tests (`connectors.vendors.github.tests.github_server`), whose git part
(`github_git`) holds real bare repositories: branches, pull requests, merges, checks, reviews,
compares and tarballs, answered as GitHub's REST API does.

`Repo` makes a bare repository and a working clone that commits and pushes to it; `git` is the
git CLI with a fixed identity; `tar_gz` builds an archive (to serve hostile ones)."""
from __future__ import annotations

from connectors.vendors.github.tests.github_git import GitHubState, Pull, Repo, git, tar_gz
from connectors.vendors.github.tests.github_server import GitHubServer

__all__ = ["GitHubServer", "GitHubState", "Pull", "Repo", "git", "tar_gz"]
