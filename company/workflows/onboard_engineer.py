"""Onboard an engineer: add them to a team of the company's GitHub organization.

Joining a team grants access to the team's repositories, so it is an `access` call: the policy
holds it for the security group (policies/shop.cedar: access-needs-security). The team's members
are read first: someone already in it is not asked about again. GitHub sets a membership with a
PUT, so an add whose reply was lost is simply sent again; a person not yet in the organization is
invited, and their membership stays `pending` until they accept.
"""
from typing import Literal

from pydantic import BaseModel, Field

from connectors.vendors.github import github
from runs.authoring import Ctx, define_workflow


class EngineerInput(BaseModel):
    username: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}$", description="their GitHub login")
    team: str = Field(default="developers", pattern=r"^[a-z0-9][a-z0-9_-]{0,254}$", description="the team's slug")
    role: Literal["member", "maintainer"] = "member"


def run(ctx: Ctx, input: EngineerInput):
    ctx.tag(github=input.username)
    team = ctx.github.team.members({"team": input.team})
    if input.username.lower() in {member.lower() for member in team.members}:
        return {"team": input.team, "username": input.username, "state": "active", "added": False}
    added = ctx.github.team.add_member({"team": input.team, "username": input.username, "role": input.role})
    return {"team": added.team, "username": added.username, "state": added.state, "added": True}


onboard_engineer = define_workflow(
    name="onboard-engineer",
    title="Onboard an engineer on GitHub",
    input=EngineerInput,
    uses=[github.op("github.team.members"), github.op("github.team.add_member")],
    run=run,
)
