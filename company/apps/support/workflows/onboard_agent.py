"""Give a new support agent access to the shop admin, once their lead has signed off."""
from pydantic import BaseModel, Field

from runs.authoring import Ctx, define_workflow


class AgentInput(BaseModel):
    username: str = Field(min_length=1)
    lead: str = Field(default="support-lead", min_length=1)


def run(ctx: Ctx, input: AgentInput):
    signed = ctx.approval(
        f"Onboard {input.username} as a support agent",
        approver=input.lead,
        details={"username": input.username},
    )
    granted = ctx.shop.staff.grant({"username": input.username, "role": "support"})
    return {"granted": granted.role, "signed_off_by": signed.approved_by}


onboard_agent = define_workflow(
    name="onboard-agent",
    title="Onboard a support agent",
    input=AgentInput,
    run=run,
)
