"""What the outline's run-time check costs a ctx call: `.venv/bin/python bench/outline_check.py`.

Every ctx call is held to the workflow's outline (`check_call`) before the policy or the vendor
sees it. A call made directly in `run` is one position look-up; a call inside a helper is placed
by the chain of helper calls that led there, read back up the frames. This writes a workflow file
with both (a call in run, in a helper, in a helper three deep, and in a helper called from a
ctx.all member inside a helper), then times `check_call` for each over many calls (outline read
and cached first, as a worker has it) beside an empty function call. No database.
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from runs.config.outline import check_call, outline_of  # noqa: E402

WORKFLOW = """
    from runs.config.workflows import define_workflow


    def one(ctx):
        return ctx.shop.order.helper({})


    def three(ctx):
        return two(ctx)


    def two(ctx):
        return deeper(ctx)


    def deeper(ctx):
        return ctx.shop.order.deep({})


    def fan(ctx):
        return ctx.all([lambda: one(ctx)])


    def run(ctx, input):
        for _ in range(input["turns"]):
            ctx.shop.order.direct({})
            one(ctx)
            three(ctx)
        fan(ctx)


    WORKFLOW = define_workflow(name="bench-outline", run=run, uses=["shop.order.direct", "all"])
"""


class Timing:
    """A stand-in ctx whose every call times `check_call` for the frame that made it."""

    def __init__(self, definition: Any) -> None:
        self.definition = definition
        self.times: dict[str, list[float]] = {}

    def _check(self, frame: FrameType, call: str) -> None:
        started = time.perf_counter_ns()
        why = check_call(self.definition, frame, call)
        spent = time.perf_counter_ns() - started
        if why is not None:
            raise AssertionError(why)
        self.times.setdefault(call, []).append(spent / 1000)

    def __getattr__(self, vendor: str) -> Any:
        return _Path(self, (vendor,))

    def all(self, members: list[Any]) -> list[Any]:
        self._check(sys._getframe(1), "all")
        return [member() for member in members]


class _Path:
    def __init__(self, ctx: Timing, path: tuple[str, ...]) -> None:
        self.ctx, self.path = ctx, path

    def __getattr__(self, name: str) -> _Path:
        return _Path(self.ctx, (*self.path, name))

    def __call__(self, payload: Any) -> None:
        self.ctx._check(sys._getframe(1), ".".join(self.path))


def nothing() -> None:
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench_outline_workflow.py"
        path.write_text(textwrap.dedent(WORKFLOW).lstrip("\n"), encoding="utf-8")
        spec = importlib.util.spec_from_file_location("bench_outline_workflow", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        definition = module.WORKFLOW
        started = time.perf_counter()
        drawn = outline_of(definition)
        print(f"outline read once: {(time.perf_counter() - started) * 1000:.2f} ms, {len(drawn.sites)} call sites, "
              f"problems: {len(drawn.problems)}")
        ctx = Timing(definition)
        definition.run(ctx, {"turns": 200})  # warm: code positions cached per code object
        ctx.times.clear()
        for _ in range(5):
            definition.run(ctx, {"turns": args.turns // 5})
    empty = []
    for _ in range(args.turns):
        started_ns = time.perf_counter_ns()
        nothing()
        empty.append((time.perf_counter_ns() - started_ns) / 1000)
    rows = [("a call in run", "shop.order.direct"), ("in a helper", "shop.order.helper"),
            ("in a helper 3 deep", "shop.order.deep"), ("ctx.all in a helper", "all")]
    print(f"{'where the call is':<26}{'calls':>8}{'p50 µs':>10}{'p95 µs':>10}")
    for label, call in rows:
        times = sorted(ctx.times[call])
        print(f"{label:<26}{len(times):>8}{statistics.median(times):>10.2f}"
              f"{times[int(len(times) * 0.95) - 1]:>10.2f}")
    empty.sort()
    print(f"{'(an empty function call)':<26}{len(empty):>8}{statistics.median(empty):>10.2f}"
          f"{empty[int(len(empty) * 0.95) - 1]:>10.2f}")


if __name__ == "__main__":
    main()
