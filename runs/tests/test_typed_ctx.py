"""The typed `Ctx`, as an author meets it: mypy run on small workflow files that annotate
`ctx: Ctx`. A correct file passes; each wrong call in another is an error at its line, with what
mypy says about it."""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

HEADER = '''\
from datetime import timedelta
from typing import Protocol

from pydantic import BaseModel

from runs.authoring import Ctx, define_connector, define_workflow, op


class OrderRef(BaseModel):
    order_id: str


class Order(BaseModel):
    order_id: str
    customer: str


class Shipped(BaseModel):
    tracking: str


class Shop:  # a connector declared as a class: its calls are typed
    class order:
        get = op(effect="read", input=OrderRef, output=Order)


shop = define_connector("shop", Shop)


class ShopCtx(Ctx, Protocol):
    shop: Shop
'''

GOOD = HEADER + '''

def run(ctx: ShopCtx, input: OrderRef) -> dict[str, str]:
    order = ctx.shop.order.get(OrderRef(order_id=input.order_id))
    again = ctx.shop.order.get({"order_id": order.order_id}, timeout=5)
    shipped = ctx.wait_message("shipped", model=Shipped, timeout=timedelta(days=2))
    raw = ctx.wait_message("noted", timeout=60)
    ok = ctx.approval("Refund?", approver="group:finance", covers=["shop.order.get"])
    ctx.sleep(seconds=3)
    ctx.sleep(until=ctx.now() + timedelta(hours=1))
    child = ctx.start_run("other", {"n": 1})
    done = ctx.wait_run(child, model=Order)
    sums: list[int] = ctx.all([lambda: 1, lambda: 2])
    orders: list[Order] = ctx.all([lambda p=p: ctx.shop.order.get({"order_id": p}) for p in ("1", "2")])
    anything = ctx.crm.lead.find({"q": "x"})  # a connector declared as a dict: Any
    ctx.data.notes.put({"record": {"order_id": "1"}})
    ctx.tag(order=order.order_id)
    return {"customer": order.customer + again.customer + done.customer, "tracking": shipped.tracking,
            "raw": str(raw["n"]), "by": ok.approved_by, "id": ctx.run_id, "n": str(sum(sums)),
            "a": str(anything), "o": orders[0].customer}


flow = define_workflow(name="good", input=OrderRef, run=run)
'''

# Each wrong call, and what mypy says at its line.
WRONG = [
    ('ctx.sleep(secs=3)', 'Unexpected keyword argument "secs" for "sleep" of "Ctx"'),
    ('ctx.sleeep(seconds=3)', '"Vendor" not callable'),
    ('ctx.approval("Refund?")', 'Missing named argument "approver" for "approval" of "Ctx"'),
    ('ctx.shop.order.get(Shipped(tracking="x"))',
     'Argument 1 to "__call__" of "OperationSpec" has incompatible type "Shipped"; expected '
     '"OrderRef | Mapping[str, Any] | None"'),
    ('ctx.shop.order.gett({"order_id": "1"})', '"type[order]" has no attribute "gett"'),
    ('ctx.shop.order.get({"order_id": "1"}).customerr', '"Order" has no attribute "customerr"'),
    ('ctx.wait_message("shipped", model=Shipped).trackingg', '"Shipped" has no attribute "trackingg"'),
    ('ctx.wait_run("r.1", model=Order).totl', '"Order" has no attribute "totl"'),
    ('ctx.crm.lead({"q": "x"})', '"Resource" not callable'),
    ('ctx.crm.lead.find({"q": "x"}, retries=2)', 'Unexpected keyword argument "retries" for "__call__" of "Call"'),
    ('ctx.wait_message(topic=3)', 'No overload variant of "wait_message" of "Ctx" matches argument type "int"'),
]


def bad_source() -> tuple[str, dict[int, str]]:
    lines = [*HEADER.splitlines(), "", "", "def run(ctx: ShopCtx, input: OrderRef) -> None:"]
    expected = {}
    for call, says in WRONG:
        lines.append(f"    {call}")
        expected[len(lines)] = says
    return "\n".join(lines) + "\n", expected


def test_mypy_passes_a_workflow_typed_with_ctx_and_names_each_wrong_call(tmp_path):
    good = tmp_path / "good_flow.py"
    good.write_text(GOOD)
    bad = tmp_path / "bad_flow.py"
    source, expected = bad_source()
    bad.write_text(source)
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\npython_version = 3.11\n")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--follow-imports=silent", "--no-error-summary",
         "--cache-dir", str(tmp_path / "cache"), "--hide-error-context", str(good), str(bad)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    errors: dict[tuple[str, int], list[str]] = {}
    for said_line in done.stdout.splitlines():
        found = re.match(r"^(.*?):(\d+): error: (.*?)(?:  \[[a-z-]+\])?$", said_line)
        if found:
            errors.setdefault((Path(found.group(1)).name, int(found.group(2))), []).append(found.group(3))
    assert not [key for key in errors if key[0] == good.name], done.stdout
    for line, says in expected.items():
        said = " ".join(errors.get((bad.name, line), []))
        assert says in said, f"line {line}: expected {says!r}, mypy said {said!r}\n{done.stdout}"
    assert sorted(line for name, line in errors if name == bad.name) == sorted(expected), done.stdout


def test_the_examples_in_the_ctx_module_are_what_the_engine_gives():
    # `Ctx` names what RunContext offers: every public member of the engine's ctx is in the protocol.
    from runs.ctx import Ctx
    from runs.engine.context import RunContext

    engine = {name for name in vars(RunContext) if not name.startswith("_")}
    typed = {name for name in vars(Ctx) if not name.startswith("_")}
    assert engine - typed == set(), "RunContext offers what Ctx does not type"
    assert typed - engine == {"data"}  # ctx.data is reached through RunContext.__getattr__
    assert textwrap.dedent(Ctx.__doc__ or "").strip()
