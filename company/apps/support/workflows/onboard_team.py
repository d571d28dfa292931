"""Onboard several support agents at once: one `support.onboard-agent` run per new hire, all
started first, then waited for together. Each child asks its own sign-offs."""
from pydantic import BaseModel, Field

from runs.authoring import Ctx, define_workflow


class TeamInput(BaseModel):
    usernames: list[str] = Field(min_length=1, max_length=20)
    lead: str = Field(default="support-lead", min_length=1)


def run(ctx: Ctx, input: TeamInput):
    started = [ctx.start_run("support.onboard-agent", {"username": name, "lead": input.lead})
               for name in input.usernames]
    outcomes = ctx.all([lambda child=child: ctx.wait_run(child) for child in started])
    return {"onboarded": [{"username": name, **outcome}
                          for name, outcome in zip(input.usernames, outcomes, strict=True)]}


onboard_team = define_workflow(
    name="onboard-team",
    title="Onboard a team of support agents",
    input=TeamInput,
    run=run,
)
