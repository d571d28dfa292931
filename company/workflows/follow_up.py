"""Check in with a customer some time after an order: sleep, then write."""
from pydantic import BaseModel, Field

from runs.authoring import Ctx, define_workflow


class FollowUpInput(BaseModel):
    order_id: str = Field(min_length=1)
    after_seconds: float = Field(default=2, ge=0)


def run(ctx: Ctx, input: FollowUpInput):
    ctx.tag(order=input.order_id)
    order = ctx.shop.order.get({"order_id": input.order_id})
    ctx.sleep(seconds=input.after_seconds)
    sent = ctx.shop.customer.notify({"customer": order.customer, "subject": "How is your order?"})
    return {"message_id": sent.message_id, "asked_at": ctx.now().isoformat()}


follow_up = define_workflow(
    name="follow-up",
    title="Follow up on an order",
    input=FollowUpInput,
    run=run,
)
