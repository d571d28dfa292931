"""Runs through every path of a workflow written as ordinary Python (early returns, `break` and
`continue` in loops that call ctx, helpers of the same file taking ctx, one sleeping so the run is
replayed through them) finish on the real engine with the in-memory fakes: the outline's run-time
check places each call, in a helper too, and refuses the one made by a way the outline does not draw."""
from __future__ import annotations

import importlib.util
import sys
import textwrap
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from runs.config.outline import outline_of
from runs.engine import clock
from runs.models import Run

WORKFLOW = """
    import sys

    from pydantic import BaseModel

    from runs.authoring import define_workflow
    from runs.tests.fixtures import GET, PUBLISH, SEND


    class Paths(BaseModel):
        orders: list[str] = []
        stop: bool = False
        first_big: bool = False
        sneak: bool = False


    def tell(ctx, to, text):
        return ctx.acme.mail.send({"to": to, "text": text}).id


    def look_up(c, order_id):
        order = c.acme.order.get({"order_id": order_id})
        if order.total > 1000:
            tell(c, "finance", f"big order {order_id}")
            return order
        c.acme.post.publish({"text": f"small order {order_id}"})
        return order


    def pause(ctx, seconds):
        ctx.sleep(seconds=seconds)


    def run(ctx, input):
        if input.stop:
            tell(ctx, "ops", "stopped")
            return {"stopped": True}
        totals = []
        for order_id in input.orders:
            if not order_id:
                continue
            if order_id == "end":
                break
            order = look_up(ctx, order_id)
            if order.total > 1000 and input.first_big:
                return {"first_big": order_id, "totals": totals}
            totals.append(order.total)
            pause(ctx, 30)
        if input.sneak:
            sneak()
        ctx.all([lambda: tell(ctx, "a", "done"), lambda: tell(ctx, "b", "done")])
        return {"totals": totals}


    def sneak():  # reaches a helper by a way the outline does not draw
        tell(sys._getframe(1).f_locals["ctx"], "ops", "sneaked")


    paths = define_workflow(name="paths", input=Paths, run=run, uses=[GET, SEND, PUBLISH, "sleep", "all"])
"""


@pytest.fixture
def paths(tmp_path: Path) -> Any:
    path = tmp_path / "paths_workflow.py"
    path.write_text(textwrap.dedent(WORKFLOW).lstrip("\n"), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("outline_runs_paths", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module.paths
    finally:
        sys.modules.pop(spec.name, None)


def finish(engine: Any, run: Run) -> Run:
    """Wake the run from each of its sleeps until it ends (each wake replays it from the top)."""
    for _ in range(10):
        run.refresh_from_db()
        if run.status != "waiting":
            return run
        clock.advance(timedelta(seconds=31))
        engine.drain()
    raise AssertionError(f"run {run.id} still {run.status}")


def sent(engine: Any) -> list[tuple[str, str]]:
    return [(c["op"], str(c["input"].get("to") or c["input"].get("order_id") or c["input"].get("text")))
            for c in engine.fake.calls]


def test_the_workflow_is_drawn_without_problems(paths: Any) -> None:
    drawn = outline_of(paths)
    assert drawn.problems == ()
    assert [n.kind for n in drawn.nodes] == ["branch", "each", "all"]
    assert sorted({n.info["function"] for n in drawn.walk() if n.kind == "helper"}) == ["look_up", "pause", "tell"]


def test_an_early_return_in_a_branch_ends_the_run_after_its_helper(engine_for: Any, paths: Any) -> None:
    engine = engine_for(paths)
    run = engine.run("paths", {"stop": True})
    assert (run.status, run.result) == ("finished", {"stopped": True}), run.error
    assert sent(engine) == [("acme.mail.send", "ops")]


def test_continue_break_and_helpers_nested_and_in_ctx_all_replayed_through_sleeps(engine_for: Any, paths: Any
                                                                                  ) -> None:
    engine = engine_for(paths)
    run = finish(engine, engine.run("paths", {"orders": ["1", "", "2", "end", "1"]}))
    assert (run.status, run.result) == ("finished", {"totals": [100, 5000]}), run.error
    assert sent(engine) == [
        ("acme.order.get", "1"), ("acme.post.publish", "small order 1"),  # "" continued past
        ("acme.order.get", "2"), ("acme.mail.send", "finance"),  # look_up's own tell
        ("acme.mail.send", "a"), ("acme.mail.send", "b"),  # "end" broke the loop: the ctx.all's tells
    ]
    assert [r["type"] for r in engine.records(run) if r["type"] == "sleep.started"] == ["sleep.started"] * 2


def test_an_early_return_inside_a_loop_ends_the_run_there(engine_for: Any, paths: Any) -> None:
    engine = engine_for(paths)
    run = finish(engine, engine.run("paths", {"orders": ["1", "2", "1"], "first_big": True}))
    assert (run.status, run.result) == ("finished", {"first_big": "2", "totals": [100]}), run.error
    assert sent(engine) == [("acme.order.get", "1"), ("acme.post.publish", "small order 1"),
                            ("acme.order.get", "2"), ("acme.mail.send", "finance")]


def test_a_helper_reached_by_a_way_the_outline_does_not_draw_fails_the_run_before_the_vendor(
        engine_for: Any, paths: Any, tmp_path: Path) -> None:
    engine = engine_for(paths)
    run = finish(engine, engine.run("paths", {"orders": [], "sneak": True}))
    assert run.error is not None
    assert (run.status, run.error["code"]) == ("failed", "call_not_in_outline"), run.error
    assert f"{tmp_path / 'paths_workflow.py'}:17:12 (tell)" in run.error["message"]
    assert engine.fake.calls == []
