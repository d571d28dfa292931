"""The inputs and outputs of the `github` connector's operations besides its resource types'."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from connectors.vendors.github.resources import LOGIN, TEAM_SLUG


class RepositoryQuery(BaseModel):
    type: Literal["all", "public", "private", "internal"] = "all"


class ListedRepository(BaseModel):
    name: str
    visibility: str
    archived: bool = False
    html_url: str = ""


class Repositories(BaseModel):
    repositories: list[ListedRepository]


class TeamRef(BaseModel):
    team: str = Field(pattern=TEAM_SLUG, description="the team's slug")
    role: Literal["all", "member", "maintainer"] = "all"


class TeamMembers(BaseModel):
    team: str
    members: list[str] = Field(description="the logins of the team's active members")


class TeamMemberAdd(BaseModel):
    team: str = Field(pattern=TEAM_SLUG, description="the team's slug")
    username: str = Field(pattern=LOGIN, description="the person's GitHub login")
    role: Literal["member", "maintainer"] = "member"


class TeamMembership(BaseModel):
    team: str
    username: str
    role: str
    state: str = Field(description="active, or pending until a person not yet in the organization accepts "
                                   "GitHub's invitation")


__all__ = ["ListedRepository", "Repositories", "RepositoryQuery", "TeamMemberAdd", "TeamMembers", "TeamMembership",
           "TeamRef"]
