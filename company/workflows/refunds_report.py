"""Every weekday morning: how many refunds went out, and for how much. Reads the shop, sleeps nothing."""
from runs.authoring import Ctx, Schedule, define_workflow


def run(ctx: Ctx, input):
    listed = ctx.shop.refund.list({"limit": 100})
    return {"refunds": len(listed.refunds), "total_cents": listed.total_cents, "at": ctx.now().isoformat()}


refunds_report = define_workflow(
    name="refunds-report",
    title="Weekday refunds report",
    run=run,
    trigger=Schedule(cron="0 8 * * 1-5", timezone="Europe/Helsinki", overlap="skip"),
)
