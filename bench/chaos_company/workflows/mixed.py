"""The chaos harness's workflows, sharing one call.

`chaos-mixed`, its workload: calls at one kind of vendor, then what the input asks for, in this
order: a sleep, a child run started, an approval (the harness decides it), a message (the harness
sends it), more calls, the child waited for. `chaos-child`, the child it starts: two calls at the
parent's kind of vendor."""
from typing import Literal

from pydantic import BaseModel, Field

from runs.authoring import define_workflow

from ..vendor import CHARGE, POST, RECONCILED_CHARGE


class ChildInput(BaseModel):
    vendor: Literal["honoured", "ignored", "reconciled"]


class MixedInput(BaseModel):
    vendor: Literal["honoured", "ignored", "reconciled"]
    calls: int = Field(default=1, ge=1, le=10)
    sleep_ms: int = Field(default=0, ge=0, le=60_000)
    child: bool = False
    approval: bool = False
    message: bool = False


def call(ctx, vendor: str, n: int) -> str:
    """One effect at the chosen vendor; its reference is unique to this run and call."""
    payload = {"ref": f"{ctx.run_id}/{n}", "n": n}
    if vendor == "honoured":
        return ctx.chaos.honoured.post(payload).entry_id
    if vendor == "ignored":
        return ctx.chaos.ignored.charge(payload).entry_id
    return ctx.chaos.reconciled.charge(payload).entry_id


def run(ctx, input: MixedInput):
    entries = [call(ctx, input.vendor, 0)]
    if input.sleep_ms:
        ctx.sleep(ms=input.sleep_ms)
    child = ctx.start_run("chaos-child", {"vendor": input.vendor}) if input.child else None
    if input.approval:
        ctx.approval("Chaos: go on?", approver="chaos-approver")
    if input.message:
        ctx.wait_message("go")
    for n in range(1, input.calls):
        entries.append(call(ctx, input.vendor, n))
    if child is not None:
        entries.extend(ctx.wait_run(child)["entries"])
    return {"entries": entries}


mixed = define_workflow(name="chaos-mixed", title="Chaos: a mixed run", input=MixedInput,
                        uses=[POST, CHARGE, RECONCILED_CHARGE, "sleep", "start_run", "approval", "wait_message",
                              "wait_run"], run=run)


def run_child(ctx, input: ChildInput):
    return {"entries": [call(ctx, input.vendor, 0), call(ctx, input.vendor, 1)]}


chaos_child = define_workflow(name="chaos-child", title="Chaos: a child run", input=ChildInput,
                              uses=[POST, CHARGE, RECONCILED_CHARGE], run=run_child)
