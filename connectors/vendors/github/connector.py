"""The `github` connector: an organization's repositories, their branch protections and its teams'
memberships as resource types, and the lists a company may read; the environment its driver reads."""
from __future__ import annotations

import urllib.parse

from pydantic import BaseModel, Field, field_validator

from connectors.operations import VendorInfo, define_connector, op
from connectors.vendors.github.models import (
    Repositories,
    RepositoryQuery,
    TeamMemberAdd,
    TeamMembers,
    TeamMembership,
    TeamRef,
)
from connectors.vendors.github.resources import LOGIN, branch_protection, repository, team_membership

LOGO = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" '
        'fill="#24292f"/><circle cx="5" cy="4" r="1.6" fill="#fff"/><circle cx="5" cy="12" r="1.6" fill="#fff"/>'
        '<circle cx="11" cy="6" r="1.6" fill="#fff"/><path d="M5 5.5v5M11 7.5c0 2-6 1.5-6 3" stroke="#fff" '
        'fill="none" stroke-width="1.2"/></svg>')

LOOPBACK = ("127.0.0.1", "localhost", "::1")


class GitHubEnvironment(BaseModel):
    """What the GitHub driver reads (a worker on the fake needs none of it)."""

    GITHUB_TOKEN: str = Field(min_length=1, description="a token with the repo and admin:org scopes, delete_repo to "
                                                        "delete (or an App's: Administration and Members)")
    GITHUB_ORG: str = Field(pattern=LOGIN, description="the organization whose repositories and teams are declared")
    GITHUB_API_URL: str = Field(default="https://api.github.com",
                                description="GitHub's API root (GitHub Enterprise Server: https://<host>/api/v3)")

    @field_validator("GITHUB_API_URL")
    @classmethod
    def _https(cls, value: str) -> str:
        host = urllib.parse.urlsplit(value).hostname or ""
        if not value.startswith("https://") and not (value.startswith("http://") and host in LOOPBACK):
            raise ValueError("must be an https:// URL (http:// only on this machine: 127.0.0.1 or localhost)")
        return value.rstrip("/")


github = define_connector(
    "github",
    {
        "repository": {
            "list": op(effect="read", input=RepositoryQuery, output=Repositories, idempotent=True,
                       description="List the organization's repositories",
                       summary="List the organization's {type} repositories"),
        },
        "team": {
            "members": op(effect="read", input=TeamRef, output=TeamMembers, idempotent=True,
                          target=lambda i: f"team/{i.team}", description="List a team's members",
                          summary="List the members of the team {team}"),
            # A PUT that sets the membership: the same call twice is one membership, so it is retried.
            "add_member": op(effect="access", input=TeamMemberAdd, output=TeamMembership, idempotent=True,
                             target=lambda i: f"team/{i.team}",
                             description="Add a person to a team (invited to the organization if not in it)",
                             summary="Add {username} to the team {team} as {role}",
                             expect="{username} was added to the team {team}"),
        },
    },
    info=VendorInfo(title="GitHub", logo=LOGO, homepage="https://github.com"),
    environment=GitHubEnvironment,
    types=[repository, branch_protection, team_membership],
)

__all__ = ["LOGO", "GitHubEnvironment", "github"]
