"""Refund an order: read it, refund it (the policy holds money for finance), tell the customer, and
keep a note of it in the company's `notes` collection."""
from pydantic import BaseModel, Field

from company.vendors.shop import OrderRef, RefundRequest, shop
from runs.authoring import Ctx, define_workflow


class RefundInput(BaseModel):
    order_id: str = Field(min_length=1)
    # The refund's own rule: above its ceiling, the run is refused before it starts.
    amount_cents: int = shop.op("shop.order.refund").amount_field(gt=0)
    reason: str = "customer request"


def run(ctx: Ctx, input: RefundInput):
    order = ctx.shop.order.get(OrderRef(order_id=input.order_id))
    # Found by its order and its customer on the desk (search "1001") and the API (`?tag=order=1001`).
    ctx.tag(order=order.order_id, customer=order.customer)
    refund = ctx.shop.order.refund(
        RefundRequest(order_id=order.order_id, amount_cents=input.amount_cents, reason=input.reason))
    ctx.shop.customer.notify({
        "customer": order.customer,
        "subject": f"Your refund for order {order.order_id}",
        "body": f"We refunded {refund.amount_cents / 100:.2f}.",
    })
    ctx.data.notes.put({"record": {
        "order_id": order.order_id,
        "customer": order.customer,
        "text": f"Refunded {refund.amount_cents / 100:.2f}: {input.reason}",
        "refund_id": refund.refund_id,
        "refunded_cents": refund.amount_cents,
    }})
    return {"refund_id": refund.refund_id, "amount_cents": refund.amount_cents}


refund = define_workflow(
    name="refund",
    title="Refund an order",
    input=RefundInput,
    run=run,
)
