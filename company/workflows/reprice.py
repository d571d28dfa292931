"""Publish new prices for several products as one fan-out."""
from pydantic import BaseModel, Field

from runs.authoring import Ctx, define_workflow


class Price(BaseModel):
    sku: str = Field(min_length=1)
    price_cents: int = Field(gt=0)


class RepriceInput(BaseModel):
    prices: list[Price] = Field(min_length=1)


def run(ctx: Ctx, input: RepriceInput):
    published = ctx.all([
        (lambda p=p: ctx.shop.product.price({"sku": p.sku, "price_cents": p.price_cents}))
        for p in input.prices
    ])
    return {"published": [p.sku for p in published]}


reprice = define_workflow(
    name="reprice",
    title="Publish new prices",
    input=RepriceInput,
    run=run,
)
