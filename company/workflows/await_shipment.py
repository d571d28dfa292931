"""Wait for the warehouse to say an order shipped, then tell the customer; if it has not shipped
in time, tell the customer it is late instead.

The warehouse sends the message through the API (`POST /api/runs/<id>/messages` with
`{"topic": "shipped", "payload": {"carrier": ..., "tracking": ...}}`) or `manage.py send`.
"""
from pydantic import BaseModel, Field

from runs.authoring import Ctx, SanomaError, define_workflow, error_code


class ShipmentInput(BaseModel):
    order_id: str = Field(min_length=1)
    within_hours: float = Field(default=48, gt=0)


class Shipped(BaseModel):
    """What the warehouse says when an order leaves it."""

    carrier: str = ""
    tracking: str = ""


def run(ctx: Ctx, input: ShipmentInput):
    ctx.tag(order=input.order_id)
    order = ctx.shop.order.get({"order_id": input.order_id})
    try:
        shipped = ctx.wait_message("shipped", model=Shipped, timeout=input.within_hours * 3600)
    except SanomaError as err:
        if error_code(err) != "wait_timed_out":
            raise
        ctx.shop.customer.notify({
            "customer": order.customer,
            "subject": f"Your order {order.order_id} is running late",
            "body": "We are sorry: it has not left the warehouse yet. We will write again when it does.",
        })
        return {"shipped": False}
    tracking = shipped.tracking
    ctx.shop.customer.notify({
        "customer": order.customer,
        "subject": f"Your order {order.order_id} is on its way",
        "body": f"Tracking number: {tracking}",
    })
    return {"shipped": True, "tracking": tracking}


await_shipment = define_workflow(
    name="await-shipment",
    title="Tell the customer when an order ships",
    input=ShipmentInput,
    run=run,
)
