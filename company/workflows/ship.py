"""Ship an order: book the carrier's pickup, then tell the customer the tracking number.

The carrier takes every booking anew (it ignores idempotency keys), so a booking whose reply never
came back (the worker died between the carrier's answer and the checkpoint) is not sent again: the
run asks the carrier's lookup whether the booking was made and goes on with its answer, or, when
the lookup cannot say, waits `in_doubt` for an operator (`manage.py resolve`, or the run's page).
"""
from typing import Literal

from pydantic import BaseModel, Field

from runs.authoring import Ctx, define_workflow


class ShipInput(BaseModel):
    order_id: str = Field(min_length=1)
    carrier: Literal["posti", "dhl"] = "posti"


def run(ctx: Ctx, input: ShipInput):
    # Tagged first, so the run is found by its order while it waits for anything.
    ctx.tag(order=input.order_id)
    shipment = ctx.shop.shipment.book({"order_id": input.order_id, "carrier": input.carrier})
    order = ctx.shop.order.get({"order_id": input.order_id})
    ctx.tag(customer=order.customer)
    ctx.shop.customer.notify({
        "customer": order.customer,
        "subject": f"Your order {order.order_id} is on its way",
        "body": f"{shipment.carrier} tracking number: {shipment.tracking}",
    })
    return {"shipment_id": shipment.shipment_id, "tracking": shipment.tracking}


ship = define_workflow(
    name="ship",
    title="Ship an order",
    input=ShipInput,
    run=run,
)
