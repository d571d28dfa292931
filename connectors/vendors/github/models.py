"""The inputs and outputs of the `github` connector's operations besides its resource types'."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from connectors.vendors.github.resources import TEAM_SLUG


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


__all__ = ["ListedRepository", "Repositories", "RepositoryQuery", "TeamMembers", "TeamRef"]
